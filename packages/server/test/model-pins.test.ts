/**
 * Models added by URL alone: the hub resolver against a local server that behaves like the model
 * hub (redirects, X-Linked-Size / X-Linked-Etag, HEAD, Range), `admin model-add --url`, and the
 * coordinator pinning a model's size and sha256 the first time a node asks for it, then the node
 * downloading it through the hub's redirect.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAgent, type RunningAgent } from '@meshwork/node'
import { addModel, addModelByUrl } from '../src/cli/admin-commands.ts'
import {
  resolveModelSource,
  sha256FromEtag,
  SourceResolveError,
} from '../src/core/models/resolve-model-source.ts'
import { PIN_FAILURE_PREFIX } from '../src/core/models/model-pins.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { startFakeHub, type FakeHub } from './support/fake-hub.ts'
import { linkNode, waitUntil } from './support/network.ts'

const bytes = randomBytes(200_000)
const sha256 = createHash('sha256').update(bytes).digest('hex')

describe('resolveModelSource against a fake hub', () => {
  let hub: FakeHub
  beforeAll(async () => {
    hub = await startFakeHub()
  })
  afterAll(() => hub.close())

  it('reads size and sha256 from the linked headers of the redirect, without the bytes', async () => {
    hub.publish('Qwen/Q-GGUF', 'q4_k_m.gguf', { bytes })
    const before = hub.requests.length
    const found = await resolveModelSource(hub.fileUrl('Qwen/Q-GGUF', 'q4_k_m.gguf'))
    expect(found).toEqual({ sizeBytes: bytes.length, sha256, fileName: 'q4_k_m.gguf' })
    const asked = hub.requests.slice(before)
    // The redirect and the CDN answer a HEAD each; no byte of the file is fetched.
    expect(asked.map((r) => r.method)).toEqual(['HEAD', 'HEAD'])
    expect(asked[1].url).toMatch(/^\/cdn\/[0-9a-f]{64}\?signature=fake$/)
  })

  it('takes the size from a plain server, without a sha256', async () => {
    hub.publish('plain/p', 'p.gguf', { bytes, plain: true })
    expect(await resolveModelSource(hub.fileUrl('plain/p', 'p.gguf'))).toEqual({
      sizeBytes: bytes.length,
      sha256: null,
      fileName: 'p.gguf',
    })
  })

  it('asks for one byte (Range) where HEAD is not allowed', async () => {
    hub.publish('nohead/n', 'n.gguf', { bytes, plain: true, noHead: true })
    const before = hub.requests.length
    const found = await resolveModelSource(hub.fileUrl('nohead/n', 'n.gguf'))
    expect(found.sizeBytes).toBe(bytes.length)
    expect(hub.requests.slice(before).map((r) => [r.method, r.range])).toEqual([
      ['HEAD', undefined],
      ['GET', 'bytes=0-0'],
    ])
  })

  it('says why it cannot tell: refused, unreachable, endless redirects', async () => {
    const host = new URL(hub.url).host
    await expect(resolveModelSource(hub.fileUrl('none/x', 'x.gguf'))).rejects.toThrow(
      new SourceResolveError(`The model source ${host} answered HTTP 404 Not Found.`),
    )
    hub.loop('/loop/x/resolve/main/x.gguf')
    await expect(resolveModelSource(`${hub.url}/loop/x/resolve/main/x.gguf`)).rejects.toThrow(
      `Too many redirects from ${host}.`,
    )
    const closed = await startFakeHub()
    const url = closed.fileUrl('a/b', 'c.gguf')
    await closed.close()
    await expect(resolveModelSource(url)).rejects.toThrow(
      `The model source ${new URL(url).host} could not be reached: connection refused.`,
    )
  })

  it('reads a sha256 only from an ETag that is one', () => {
    expect(sha256FromEtag(`"${sha256}"`)).toBe(sha256)
    expect(sha256FromEtag(`W/"${sha256.toUpperCase()}"`)).toBe(sha256)
    expect(sha256FromEtag('"0123456789abcdef0123456789abcdef01234567"')).toBeNull()
    expect(sha256FromEtag(null)).toBeNull()
  })
})

describe.each(dialects)('[%s] models added by URL alone', (dialect) => {
  let server: TestServer
  let hub: FakeHub
  let agent: RunningAgent | undefined
  const home = mkdtempSync(join(tmpdir(), 'meshwork-pins-'))

  beforeAll(async () => {
    server = await startTestServer(dialect)
    hub = await startFakeHub()
  })
  afterAll(async () => {
    await agent?.stop()
    await hub?.close()
    await server?.stop()
    rmSync(home, { recursive: true, force: true })
  })

  const modelRow = (id: string) =>
    server.core.database.db
      .selectFrom('models')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()

  it('admin model-add --url pins size and sha256 from the hub, or adds unpinned with a reason', async () => {
    hub.publish('acme/Tiny-GGUF', 'tiny-chat-q4_k_m.gguf', { bytes })
    const added = await addModelByUrl(
      server.core.database.db,
      hub.fileUrl('acme/Tiny-GGUF', 'tiny-chat-q4_k_m.gguf'),
      { credit_multiplier: 2 },
    )
    expect(added).toMatchObject({ name: 'tiny-chat-q4_k_m', warning: undefined })
    expect(await modelRow(added.id)).toMatchObject({
      name: 'tiny-chat-q4_k_m',
      file_name: 'tiny-chat-q4_k_m.gguf',
      file_size_bytes: bytes.length,
      sha256,
      credit_multiplier: 2000, // thousandths: the API shows 2
      is_active: 1,
    })
    hub.failNext(1, 503)
    const later = await addModelByUrl(
      server.core.database.db,
      hub.fileUrl('acme/Later-GGUF', 'later.gguf'),
    )
    expect(later.warning).toBe(
      `The model source ${new URL(hub.url).host} answered HTTP 503 Service Unavailable. The coordinator reads the size and sha256 the first time a node asks for it.`,
    )
    expect(await modelRow(later.id)).toMatchObject({ file_size_bytes: 0, sha256: '' })
  })

  it('pins a model when a node first asks for it, says why while it cannot, and the node downloads it', async () => {
    const id = await addModel(server.core.database.db, {
      name: `unpinned-${dialect}`,
      display_name: 'Unpinned Chat',
      source_url: hub.fileUrl('acme/Unpinned-GGUF', 'unpinned.gguf'),
    })
    const owner = await signUp(server, 'pins')
    const { nodeId, credential } = await linkNode(server, owner)
    agent = await startAgent({
      server: server.url,
      nodeId,
      credential,
      home,
      threads: 1,
      gpu: false,
      progressIntervalMs: 20,
    })
    await waitUntil(() => agent!.connected, 10_000, 'agent connected')
    // Not published yet: the hub answers 404, so the coordinator cannot pin it.
    const nm = await owner
      .collection('node_models')
      .create({ node: nodeId, model: id, requested_download: true, requested_serving: false })
    const failed = await waitUntil(
      async () => {
        const row = await owner.collection('node_models').getOne(nm.id)
        return row.error_message.startsWith(PIN_FAILURE_PREFIX) && row
      },
      15_000,
      'the reason on the node model',
    )
    expect(failed.error_message).toBe(
      `${PIN_FAILURE_PREFIX} Unpinned Chat from its source: The model source ${new URL(hub.url).host} answered HTTP 404 Not Found. Retrying in 10 s.`,
    )
    expect(agent.statuses()).toEqual([]) // the node was never sent a model it cannot verify

    hub.publish('acme/Unpinned-GGUF', 'unpinned.gguf', { bytes })
    await owner
      .collection('node_models')
      .update(nm.id, { retry_requested_at: new Date().toISOString() })
    const done = await waitUntil(
      async () => {
        const row = await owner.collection('node_models').getOne(nm.id)
        return row.is_downloaded && row
      },
      20_000,
      'the download',
    )
    expect(done.error_message).toBe('')
    expect(await modelRow(id)).toMatchObject({ file_size_bytes: bytes.length, sha256 })
    expect(readFileSync(join(home, 'models', 'unpinned.gguf')).equals(bytes)).toBe(true)
    // The bytes came through the hub's redirect to its CDN.
    expect(hub.requests.some((r) => r.method === 'GET' && r.url.startsWith('/cdn/'))).toBe(true)
  })
})

describe.each(dialects)('[%s] the chat models of the catalogue', (dialect) => {
  it('are listed with their multipliers as the API shows them, unpinned but with approximate sizes', async () => {
    const server = await startTestServer(dialect)
    try {
      const pb = await signUp(server, 'catalogue')
      const models = await pb
        .collection('models')
        .getFullList({ filter: 'is_active = true', sort: 'sort_order' })
      expect(
        models.map((m) => [
          m.name,
          m.credit_multiplier,
          m.file_size_bytes,
          m.sha256 === '',
          m.approx_size_bytes,
        ]),
      ).toEqual([
        ['stories260K', 1, 1185376, false, 0],
        ['qwen2.5-0.5b-instruct', 1, 0, true, 0.49e9],
        ['llama-3.2-1b-instruct', 1, 0, true, 0.81e9],
        ['qwen2.5-1.5b-instruct', 2, 0, true, 1.12e9],
        ['llama-3.2-3b-instruct', 2, 0, true, 2.02e9],
        ['qwen2.5-7b-instruct', 4, 0, true, 4.68e9],
        ['llama-2-tiny-random', 2, 1750560, false, 0],
      ])
      for (const m of models.slice(1, 6)) {
        // The size shows beside the description; the description no longer repeats it.
        expect(m.description).not.toMatch(/GB[,.:]|about \d/)
        expect(m.source_url).toMatch(/^https:\/\/huggingface\.co\/[^/]+\/[^/]+\/resolve\/main\//)
        expect(m.source_url.endsWith(`/${m.file_name}`)).toBe(true)
        expect(m.file_name).toMatch(/q4_k_m\.gguf$/i)
      }
    } finally {
      await server.stop()
    }
  })
})
