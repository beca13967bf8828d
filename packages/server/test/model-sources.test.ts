/**
 * Where a node's model file comes from when there is no mirror: the catalogue's source (through a
 * local server that behaves like the model hub), else the built-in copy shipped with the
 * coordinator when its sha256 matches, else a 502 that says why.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeAuthorizationHeader } from '@meshwork/protocol'
import { addModel, editModel } from '../src/cli/admin-commands.ts'
import { createAsServer } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { startFakeHub, type FakeHub } from './support/fake-hub.ts'
import { linkNode } from './support/network.ts'

const builtin = readFileSync(
  fileURLToPath(new URL('../builtin-models/stories260K.gguf', import.meta.url)),
)

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

describe.each(dialects)('[%s] model file sources', (dialect) => {
  let server: TestServer
  let hub: FakeHub
  let authorization = ''
  const download = (id: string, range?: string) =>
    fetch(new URL(`/api/models/${id}/download`, server.url), {
      headers: { authorization, ...(range ? { range } : {}) },
    })
  const storiesId = async () =>
    String(
      (
        await server.core.database.db
          .selectFrom('models')
          .select('id')
          .where('name', '=', 'stories260K')
          .executeTakeFirstOrThrow()
      ).id,
    )

  beforeAll(async () => {
    server = await startTestServer(dialect) // no mirror: a fresh clone with nothing beside it
    hub = await startFakeHub()
    const owner = await signUp(server, 'sources')
    const linked = await linkNode(server, owner)
    authorization = nodeAuthorizationHeader(linked.nodeId, linked.credential)
  })
  afterAll(async () => {
    await hub?.close()
    await server?.stop()
  })

  it('streams the source through the hub redirect when it answers', async () => {
    const bytes = Buffer.from('a model that only the hub has')
    hub.publish('acme/m', 'm.gguf', { bytes })
    const id = await addModel(server.core.database.db, {
      name: `from-hub-${dialect}`,
      source_url: hub.fileUrl('acme/m', 'm.gguf'),
    })
    const res = await download(id)
    expect(res.status).toBe(200)
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true)
    const part = await download(id, 'bytes=2-')
    expect(part.status).toBe(206)
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(2))).toBe(true)
  })

  it('serves the built-in demo model when its source refuses or cannot be reached', async () => {
    const id = await storiesId()
    await editModel(server.core.database.db, id, { source_url: hub.fileUrl('ggml/m', 'x.gguf') })
    hub.failNext(1, 503)
    const refused = await download(id)
    expect(refused.status).toBe(200)
    expect(Buffer.from(await refused.arrayBuffer()).equals(builtin)).toBe(true)

    await editModel(server.core.database.db, id, {
      source_url: `http://127.0.0.1:${await closedPort()}/stories260K.gguf`,
    })
    const unreachable = await download(id, 'bytes=1000-')
    expect(unreachable.status).toBe(206)
    expect(unreachable.headers.get('content-range')).toBe(
      `bytes 1000-${builtin.length - 1}/${builtin.length}`,
    )
    expect(Buffer.from(await unreachable.arrayBuffer()).equals(builtin.subarray(1000))).toBe(true)
  })

  it('never serves the built-in file for a model with another sha256', async () => {
    const port = await closedPort()
    // The admin CLI refuses a second model of one file name; a row made before that rule, or
    // through the records API as the server, can still exist.
    const { id } = await createAsServer(server, 'models', {
      name: `impostor-${dialect}`,
      display_name: 'Impostor',
      file_name: 'stories260K.gguf',
      source_url: `http://127.0.0.1:${port}/stories260K.gguf`,
      sha256: 'e'.repeat(64),
      file_size_bytes: builtin.length,
    })
    const res = await download(String(id))
    expect(res.status).toBe(502)
    expect(await res.json()).toEqual({
      status: 502,
      message: `The model source 127.0.0.1:${port} could not be reached: connection refused.`,
      data: {},
    })
  })

  it('says what the source answered when it refuses a model that is not built in', async () => {
    const id = await addModel(server.core.database.db, {
      name: `missing-${dialect}`,
      source_url: hub.fileUrl('acme/none', 'none.gguf'),
    })
    const res = await download(id)
    expect(res.status).toBe(502)
    expect((await res.json()).message).toBe(
      `The model source ${new URL(hub.url).host} answered HTTP 404 Not Found.`,
    )
  })
})
