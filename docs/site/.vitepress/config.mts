import { defineConfig } from 'vitepress'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

// The repository's root: every sample is included from a file under it.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
// The files samples come from, repository-relative: each is copied into
// the build under /src/ (as .txt, which a browser shows), and each
// sample links to its whole file there.
const sources = new Set<string>()

// The sidebar: one entry per page. A new page is a Markdown file under
// guide/ (or reference/) and one line here.
const guide = [
  {
    text: 'Start',
    items: [
      { text: 'Quickstart', link: '/guide/quickstart' },
      { text: 'The command line', link: '/guide/cli' },
    ],
  },
  {
    text: 'Serving',
    items: [
      { text: 'Tools and typed tools', link: '/guide/tools' },
      { text: 'Asking the user, the model, the client', link: '/guide/asking' },
      { text: 'Prompts', link: '/guide/prompts' },
      { text: 'Resources and templates', link: '/guide/resources' },
      { text: 'Completion', link: '/guide/completion' },
      { text: 'MCP Apps', link: '/guide/apps' },
      { text: 'Middleware', link: '/guide/middleware' },
      { text: 'Tasks', link: '/guide/tasks' },
      { text: 'Extensions and custom methods', link: '/guide/extensions' },
    ],
  },
  {
    text: 'Running',
    items: [
      { text: 'Request state and keys', link: '/guide/request-state' },
      { text: 'Both eras, one handler', link: '/guide/eras' },
      { text: 'Transports', link: '/guide/transports' },
      { text: 'Authorization', link: '/guide/auth' },
      { text: 'A fleet', link: '/guide/fleet' },
      { text: 'The gateway', link: '/guide/gateway' },
      { text: 'Observability', link: '/guide/observability' },
    ],
  },
  {
    text: 'Testing',
    items: [
      { text: 'Testing your server', link: '/guide/testing' },
    ],
  },
  {
    text: 'Reference',
    items: [
      { text: 'API reference', link: '/reference/api' },
    ],
  },
]

export default defineConfig({
  title: 'roundtrip',
  description: 'A Go SDK for the Model Context Protocol, revision 2026-07-28',
  lang: 'en-US',
  // The site works from any static file server, without URL rewriting.
  cleanUrls: false,
  lastUpdated: false,
  srcExclude: ['test/**', 'README.md'],
  head: [
    ['meta', { name: 'theme-color', content: '#3c8772' }],
    ['link', { rel: 'icon', type: 'image/svg+xml', href: '/favicon.svg' }],
  ],
  markdown: {
    config(md) {
      const fence = md.renderer.rules.fence!
      md.renderer.rules.fence = (tokens, idx, options, env, self) => {
        const html = fence(tokens, idx, options, env, self)
        const src: string | undefined = (tokens[idx] as { src?: string[] }).src?.[0]
        if (!src) return html
        const rel = path.relative(repo, src)
        if (rel.startsWith('..') || !fs.existsSync(src)) return html
        sources.add(rel)
        return html + `<p class="sample-source">The whole file: <a href="/src/${rel}.txt" target="_blank">${md.utils.escapeHtml(rel)}</a></p>`
      }
    },
  },
  buildEnd(site) {
    for (const rel of sources) {
      const to = path.join(site.outDir, 'src', rel + '.txt')
      fs.mkdirSync(path.dirname(to), { recursive: true })
      fs.copyFileSync(path.join(repo, rel), to)
    }
  },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/quickstart' },
      { text: 'API', link: '/reference/api' },
    ],
    sidebar: { '/guide/': guide, '/reference/': guide },
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    footer: {
      message: 'Every code sample on this site is included from a Go file that compiles and runs in make check.',
    },
  },
})
