// The site's browser test: serve the built site on loopback, load every
// page in headless Chromium, and fail on a console error, a failed or
// refused request, an internal link (or #anchor) that does not resolve,
// a malformed external link, or a code sample that is missing (the
// quickstart's samples must be visible, line for line, as the Go file
// has them), a code block wider than its column at 1280 px (a
// horizontal scroll bar), a sample without its link to the whole file
// it comes from, or a missing favicon.
//
//   node test/site.test.mjs [DIST] [--only PAGE]...
//
// DIST defaults to .vitepress/dist. With --only, just those pages are
// loaded (their links are still checked against the build's files): the
// self-test in scripts/docs.sh uses it.
//
// Environment: CHROMIUM (default /usr/bin/chromium).
// Nothing outside loopback is fetched: any other request is aborted and
// counted as a failure.
import { chromium } from 'playwright-core'
import http from 'node:http'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const siteDir = path.resolve(here, '..')
const argv = process.argv.slice(2)
const only = []
for (let i = argv.indexOf('--only'); i >= 0; i = argv.indexOf('--only')) only.push(...argv.splice(i, 2).slice(1))
const dist = path.resolve(argv[0] ?? path.join(siteDir, '.vitepress', 'dist'))
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium'

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.woff2': 'font/woff2', '.ico': 'image/x-icon', '.txt': 'text/plain; charset=utf-8',
}

// serve answers GET and HEAD from dist; a missing file is 404 (with the
// site's 404 page, as a static host does).
function serve() {
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x')
    let p = decodeURIComponent(u.pathname)
    if (p.endsWith('/')) p += 'index.html'
    const file = path.join(dist, path.normalize(p))
    if (!file.startsWith(dist + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404, { 'content-type': types['.html'] })
      res.end(req.method === 'HEAD' ? undefined : fs.readFileSync(path.join(dist, '404.html')))
      return
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' })
    res.end(req.method === 'HEAD' ? undefined : fs.readFileSync(file))
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

// pagesOf lists every page the build wrote, as site paths.
function pagesOf(dir, prefix = '/') {
  const out = []
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory() && e.name !== 'assets') out.push(...pagesOf(path.join(dir, e.name), prefix + e.name + '/'))
    else if (e.isFile() && e.name.endsWith('.html') && !(prefix === '/' && e.name === '404.html')) out.push(prefix + e.name)
  }
  return out
}

// quickstartSamples: the first lines of each region the quickstart
// includes, read from the Go files themselves.
function quickstartSamples() {
  const md = fs.readFileSync(path.join(siteDir, 'guide', 'quickstart.md'), 'utf8')
  const out = []
  for (const m of md.matchAll(/^<<<\s*@\/(\S+?)#([\w*-]+)/gm)) {
    const lines = fs.readFileSync(path.join(siteDir, m[1]), 'utf8').split('\n')
    const start = lines.findIndex((l) => l.trim() === `// #region ${m[2]}`)
    const body = lines.slice(start + 1).map((l) => l.trim()).filter((l) => l && !l.startsWith('//'))
    out.push({ region: m[2], lines: body.slice(0, 3) })
  }
  return out
}

// inDist: whether url is a loopback URL naming a file of the build.
function inDist(url) {
  const u = new URL(url)
  if (u.hostname !== '127.0.0.1') return false
  const file = path.join(dist, path.normalize(decodeURIComponent(u.pathname)))
  return file.startsWith(dist + path.sep) && fs.existsSync(file) && fs.statSync(file).isFile()
}

const failures = []
const fail = (page, what) => failures.push(`${page}: ${what}`)

const server = await serve()
const origin = `http://127.0.0.1:${server.address().port}`
// Chromium's browser process was seen to crash at start-up once in a
// while (a crash report, then a closed pipe): a launch that fails is
// tried again, three times in all, each with a fresh profile.
const profiles = []
async function launch () {
  let last
  for (let i = 0; i < 3; i++) {
    const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'site-test-chromium-'))
    profiles.push(userDataDir)
    try {
      return await chromium.launchPersistentContext(userDataDir, {
        executablePath,
        headless: true,
        timeout: 30000,
        viewport: { width: 1280, height: 800 },
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
          '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      })
    } catch (err) {
      last = err
      console.error(`chromium did not start (${String(err.message).split('\n')[0]}); ${i < 2 ? 'trying again' : 'giving up'}`)
    }
  }
  throw last
}
const context = await launch()

let current = '(none)'
// Nothing leaves loopback.
await context.route('**/*', (route) => {
  const u = new URL(route.request().url())
  if (u.protocol === 'data:' || u.hostname === '127.0.0.1') return route.continue()
  fail(current, `request outside loopback refused: ${u.href}`)
  return route.abort()
})

const page = context.pages()[0] ?? await context.newPage()
page.on('console', (msg) => { if (msg.type() === 'error') fail(current, `console error: ${msg.text()}`) })
page.on('pageerror', (err) => fail(current, `page error: ${err.message}`))
// A prefetch of a linked page's script that the next navigation cancels
// fails as ERR_ABORTED: not a problem when the file is in the build (a
// missing one answers 404, which the response handler counts).
page.on('requestfailed', (req) => {
  const why = req.failure()?.errorText
  if (why === 'net::ERR_ABORTED' && inDist(req.url())) return
  fail(current, `request failed: ${req.url()} (${why})`)
})
page.on('response', (res) => { if (res.status() >= 400) fail(current, `HTTP ${res.status()}: ${res.url()}`) })

const pages = only.length > 0 ? only : pagesOf(dist)
const toVisit = [...pages]
const visited = new Set()
const anchors = new Map() // page path -> ids on it
const links = []          // { from, href }
let external = 0
let unlinkedSamples = 0 // code blocks written in the page, not included: allowed, counted
let sampleLinks = 0

while (toVisit.length > 0) {
  const p = toVisit.shift()
  if (visited.has(p)) continue
  visited.add(p)
  current = p
  const resp = await page.goto(origin + p, { waitUntil: 'networkidle' })
  if (!resp || resp.status() !== 200) {
    fail(p, `page answered ${resp?.status()}`)
    continue
  }
  const found = await page.evaluate(() => ({
    ids: [...document.querySelectorAll('[id]')].map((e) => e.id),
    hrefs: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
    text: document.body.innerText,
    // Code blocks that scroll sideways, by their longest line.
    wide: [...document.querySelectorAll('div[class*="language-"] pre')]
      .filter((p) => p.scrollWidth > p.clientWidth + 1)
      .map((p) => {
        const longest = p.innerText.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '')
        return `${p.scrollWidth} px in a ${p.clientWidth} px column: ${longest.trim().slice(0, 80)}`
      }),
    // Included samples (those that come from a file) without their link.
    unlinked: [...document.querySelectorAll('div[class*="language-"]')]
      .filter((d) => !(d.nextElementSibling?.classList.contains('sample-source'))).length,
    sampleLinks: document.querySelectorAll('.sample-source a').length,
    favicon: document.querySelector('link[rel="icon"]')?.getAttribute('href') ?? '',
  }))
  for (const w of found.wide) fail(p, `a code block wider than its column at 1280 px: ${w}`)
  if (!found.favicon) fail(p, 'no favicon')
  else found.hrefs.push(found.favicon)
  unlinkedSamples += found.unlinked
  sampleLinks += found.sampleLinks
  anchors.set(p, new Set(found.ids))
  if (/Code snippet path not found|Invalid code snippet option/.test(found.text)) fail(p, 'a code include did not resolve')
  for (const href of found.hrefs) {
    let u
    try {
      u = new URL(href, origin + p)
    } catch {
      fail(p, `malformed link: ${href}`)
      continue
    }
    if (u.origin !== origin) {
      external++
      if (!['https:', 'mailto:'].includes(u.protocol) || !u.hostname.includes('.')) fail(p, `malformed external link: ${href}`)
      continue
    }
    links.push({ from: p, href, path: u.pathname, hash: decodeURIComponent(u.hash.slice(1)) })
    const target = u.pathname.endsWith('/') ? u.pathname + 'index.html' : u.pathname
    if (only.length === 0 && target.endsWith('.html') && !visited.has(target)) toVisit.push(target)
  }
}

// Every internal link resolves: to a page that loaded, or a file of the
// build, and its #anchor to an element of that page.
for (const l of links) {
  const target = l.path.endsWith('/') ? l.path + 'index.html' : l.path
  const file = path.join(dist, path.normalize(target))
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
    fail(l.from, `broken link: ${l.href}`)
    continue
  }
  if (l.hash && anchors.has(target) && !anchors.get(target).has(l.hash)) fail(l.from, `broken anchor: ${l.href}`)
}

// The quickstart's samples are on the page, visible.
current = '/guide/quickstart.html'
await page.goto(origin + current, { waitUntil: 'networkidle' })
const samples = quickstartSamples()
if (samples.length < 3) fail(current, `found ${samples.length} included samples, want the server, serve and client ones`)
for (const s of samples) {
  for (const line of s.lines) {
    const code = page.locator('div[class*="language-go"] pre code', { hasText: line }).first()
    if (!(await code.isVisible())) fail(current, `sample ${s.region}: line not visible: ${line}`)
  }
}

await context.close()
server.close()
for (const dir of profiles) fs.rmSync(dir, { recursive: true, force: true })

if (only.length === 0 && pages.length < 10) fail('(site)', `only ${pages.length} pages in ${dist}`)
if (only.length === 0 && sampleLinks < 50) fail('(site)', `only ${sampleLinks} samples link to the file they come from`)
for (const f of failures) console.log('FAIL ' + f)
const failed = failures.length > 0 ? 1 : 0
console.log(`site: ${visited.size} pages loaded, ${links.length} internal links and ${external} external links checked, ${sampleLinks} samples linked to their files (${unlinkedSamples} code blocks written in the page), ${failures.length} problems`)
console.log(`${1 - failed} passed, ${failed} failed`)
process.exit(failed)
