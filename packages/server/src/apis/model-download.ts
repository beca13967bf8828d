/**
 * @module GET /api/models/{id}/download for nodes (credential auth): serves the file from the
 * model mirror directory when it is there, with HTTP Range support, and otherwise streams the
 * catalogue's source URL through (passing the Range header on).
 */
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { Readable } from 'node:stream'
import type { Hono } from 'hono'
import type { CoreApp } from '../core/app.ts'
import { verifyNodeAuthorization } from '../core/nodes/node-credentials.ts'
import { ApiError, notFound, unauthorized } from '../tools/api-error.ts'

export function bindModelDownload(app: Hono, core: CoreApp, mirror: string | undefined) {
  app.get('/api/models/:id/download', async (c) => {
    const nodeId = await verifyNodeAuthorization(core.database.db, c.req.header('authorization'))
    if (!nodeId) throw unauthorized('The request requires a valid node credential.')
    const model = await core.database.db
      .selectFrom('models')
      .select(['file_name', 'source_url'])
      .where('id', '=', c.req.param('id'))
      .executeTakeFirst()
    if (!model?.file_name) throw notFound()
    const fileName = basename(String(model.file_name))
    const local = mirror ? await fileSize(join(mirror, fileName)) : null
    if (local !== null && mirror)
      return serveFile(join(mirror, fileName), local, c.req.header('range'))
    if (!model.source_url) throw notFound()
    const range = c.req.header('range')
    const upstream = await fetch(String(model.source_url), {
      headers: range ? { range } : {},
      redirect: 'follow',
    }).catch((err) => {
      throw new ApiError(502, 'The model source could not be reached.', {}, err)
    })
    if (!upstream.ok || !upstream.body)
      throw new ApiError(502, `The model source answered HTTP ${upstream.status}.`)
    const headers = new Headers({ 'content-type': 'application/octet-stream' })
    for (const h of ['content-length', 'content-range', 'accept-ranges']) {
      const v = upstream.headers.get(h)
      if (v) headers.set(h, v)
    }
    return new Response(upstream.body, { status: upstream.status, headers })
  })
}

async function fileSize(path: string): Promise<number | null> {
  try {
    const s = await stat(path)
    return s.isFile() ? s.size : null
  } catch {
    return null
  }
}

function serveFile(path: string, size: number, rangeHeader: string | undefined): Response {
  const headers = new Headers({
    'content-type': 'application/octet-stream',
    'accept-ranges': 'bytes',
  })
  const match = rangeHeader ? /^bytes=(\d*)-(\d*)$/.exec(rangeHeader.trim()) : null
  if (rangeHeader && match && (match[1] || match[2])) {
    let start = match[1] ? Number(match[1]) : size - Number(match[2])
    let end = match[1] && match[2] ? Number(match[2]) : size - 1
    start = Math.max(0, start)
    end = Math.min(end, size - 1)
    if (start >= size || start > end) {
      headers.set('content-range', `bytes */${size}`)
      return new Response(null, { status: 416, headers })
    }
    headers.set('content-range', `bytes ${start}-${end}/${size}`)
    headers.set('content-length', String(end - start + 1))
    return new Response(toWeb(createReadStream(path, { start, end })), { status: 206, headers })
  }
  headers.set('content-length', String(size))
  return new Response(toWeb(createReadStream(path)), { status: 200, headers })
}

const toWeb = (stream: Readable) => Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>
