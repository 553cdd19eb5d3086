// The default theme, with the column widths of custom.css.
import DefaultTheme from 'vitepress/theme'
import './custom.css'

export default DefaultTheme
