/**
 * @module GET /downloads/meshwork-node.tgz: the node agent as an npm package (compiled JavaScript,
 * built by packages/node/scripts/pack-agent.mjs, which `npm start` runs when it is missing or
 * older than the agent's sources). Node owners install it with
 * `npm install -g <this origin>/downloads/meshwork-node.tgz`; it is public, like the setup page
 * that shows the command.
 */
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import type { Hono } from 'hono'
import { ApiError } from '../tools/api-error.ts'

export const AGENT_PACKAGE_PATH = '/downloads/meshwork-node.tgz'

export const defaultAgentPackage = fileURLToPath(
  new URL('../../../node/dist/meshwork-node.tgz', import.meta.url),
)

export function bindAgentPackage(app: Hono, file: string = defaultAgentPackage) {
  app.get(AGENT_PACKAGE_PATH, async (c) => {
    const info = await stat(file).catch(() => null)
    if (!info?.isFile()) {
      throw new ApiError(
        503,
        'The node agent package has not been built on this coordinator yet: run `npm start` (or `node packages/node/scripts/pack-agent.mjs`) there.',
      )
    }
    const etag = `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`
    if (c.req.header('if-none-match') === etag) return c.body(null, 304, { etag })
    const body =
      c.req.method === 'HEAD'
        ? null
        : (Readable.toWeb(createReadStream(file)) as unknown as ReadableStream<Uint8Array>)
    return new Response(body, {
      headers: {
        'content-type': 'application/gzip',
        'content-length': String(info.size),
        'content-disposition': 'attachment; filename="meshwork-node.tgz"',
        'cache-control': 'no-cache',
        etag,
      },
    })
  })
}
