/**
 * @module Serves the built web app (packages/web/dist) at / with client-side routing fallback:
 * any GET outside /api that is not a file gets index.html.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Context, Hono } from 'hono'
import { serveStatic } from '@hono/node-server/serve-static'
import { appPage } from './security-headers.ts'

export function bindWebApp(app: Hono, distDir: string) {
  const root = resolve(distDir)
  const indexFile = join(root, 'index.html')
  if (!existsSync(indexFile)) return false
  // Re-read index.html when a rebuild replaced it, so it never points at deleted asset hashes.
  let cached = { mtime: 0, page: appPage('') }
  const index = () => {
    const mtime = statSync(indexFile).mtimeMs
    if (mtime !== cached.mtime) cached = { mtime, page: appPage(readFileSync(indexFile, 'utf8')) }
    return cached.page
  }
  // Every page load gets its own nonce (security-headers.ts), so the page is never cached.
  const servePage = (c: Context) => {
    const page = index()(randomBytes(18).toString('base64'))
    c.header('Content-Security-Policy', page.csp)
    c.header('Cache-Control', 'no-store')
    return c.html(page.html)
  }
  app.get('/', servePage)
  app.get('/index.html', servePage)
  app.use(
    '/assets/*',
    serveStatic({
      root,
      onFound: (_path, c) => {
        c.header('Cache-Control', 'public, max-age=31536000, immutable')
      },
    }),
  )
  app.use('*', serveStatic({ root }))
  app.get('*', (c) => {
    if (c.req.path.startsWith('/api/')) return c.notFound()
    return servePage(c)
  })
  return true
}
