/**
 * @module GET /api/models/{id}/download for nodes (credential auth), with HTTP Range support. The
 * file comes from, in order: the model mirror directory (MESHWORK_MODEL_MIRROR) when it holds the
 * file; the catalogue's source URL, streamed through (Range passed on); and when the source
 * cannot be reached or refuses, the built-in copy shipped with the coordinator if its sha256 is
 * the catalogue's (the demo model, so a fresh clone with no internet can chat). When none of them
 * can serve, the 502 says why in words a node owner can act on.
 */
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { Readable } from 'node:stream'
import type { Hono } from 'hono'
import { describeNetworkError } from '@meshwork/node'
import type { CoreApp } from '../core/app.ts'
import { BuiltinModels } from '../core/models/builtin-models.ts'
import { verifyNodeAuthorization } from '../core/nodes/node-credentials.ts'
import { ApiError, notFound, unauthorized } from '../tools/api-error.ts'
import { log } from '../tools/log.ts'

export interface ModelDownloadOptions {
  mirror?: string
  builtin?: BuiltinModels
  /** How long the source may take to answer (headers) before the built-in copy is used. */
  sourceTimeoutMs?: number
}

export function bindModelDownload(app: Hono, core: CoreApp, options: ModelDownloadOptions = {}) {
  const builtin = options.builtin ?? new BuiltinModels()
  const announced = new Set<string>()
  app.get('/api/models/:id/download', async (c) => {
    const nodeId = await verifyNodeAuthorization(core.database.db, c.req.header('authorization'))
    if (!nodeId) throw unauthorized('The request requires a valid node credential.')
    const model = await core.database.db
      .selectFrom('models')
      .select(['name', 'file_name', 'source_url', 'sha256'])
      .where('id', '=', c.req.param('id'))
      .executeTakeFirst()
    if (!model?.file_name) throw notFound()
    const fileName = basename(String(model.file_name))
    const range = c.req.header('range')
    const mirrored = options.mirror ? join(options.mirror, fileName) : null
    const local = mirrored ? await fileSize(mirrored) : null
    if (mirrored && local !== null) return serveFile(mirrored, local, range)

    const source = String(model.source_url ?? '')
    const answer = source
      ? await fetchSource(source, range, options.sourceTimeoutMs ?? 15_000)
      : { failure: 'The model has no source URL.' }
    if ('response' in answer) return answer.response

    const copy = await builtin.find(fileName, String(model.sha256 ?? ''))
    if (copy) {
      if (!announced.has(fileName)) {
        announced.add(fileName)
        log.warn(`${answer.failure} Serving the built-in copy of ${fileName} instead.`)
      }
      return serveFile(copy.path, copy.size, range)
    }
    throw new ApiError(502, answer.failure)
  })
}

type SourceAnswer = { response: Response } | { failure: string }

/** The source's answer to stream through, or why it cannot be used. */
async function fetchSource(url: string, range: string | undefined, timeoutMs: number) {
  const host = new URL(url).host
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), timeoutMs)
  try {
    const upstream = await fetch(url, {
      headers: range ? { range } : {},
      redirect: 'follow',
      signal: ac.signal,
    })
    if (!upstream.ok || !upstream.body) {
      await upstream.body?.cancel()
      const status = `HTTP ${upstream.status}${upstream.statusText ? ` ${upstream.statusText}` : ''}`
      return { failure: `The model source ${host} answered ${status}.` } satisfies SourceAnswer
    }
    const headers = new Headers({ 'content-type': 'application/octet-stream' })
    for (const h of ['content-length', 'content-range', 'accept-ranges']) {
      const v = upstream.headers.get(h)
      if (v) headers.set(h, v)
    }
    return {
      response: new Response(upstream.body, { status: upstream.status, headers }),
    } satisfies SourceAnswer
  } catch (err) {
    const why = ac.signal.aborted
      ? `no answer within ${Math.round(timeoutMs / 1000)} s`
      : describeNetworkError(err)
    return {
      failure: `The model source ${host} could not be reached: ${why}.`,
    } satisfies SourceAnswer
  } finally {
    clearTimeout(timer)
  }
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
