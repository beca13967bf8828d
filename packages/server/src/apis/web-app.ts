/**
 * @module Serves the built web app (packages/web/dist) at / with client-side routing fallback:
 * any GET outside /api that is not a file gets index.html.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Hono } from 'hono'
import { serveStatic } from '@hono/node-server/serve-static'

export function bindWebApp(app: Hono, distDir: string) {
  const root = resolve(distDir)
  const indexFile = join(root, 'index.html')
  if (!existsSync(indexFile)) return false
  // Re-read index.html when a rebuild replaced it, so it never points at deleted asset hashes.
  let cached = { mtime: 0, html: '' }
  const index = () => {
    const mtime = statSync(indexFile).mtimeMs
    if (mtime !== cached.mtime) cached = { mtime, html: readFileSync(indexFile, 'utf8') }
    return cached.html
  }
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
    return c.html(index())
  })
  return true
}
