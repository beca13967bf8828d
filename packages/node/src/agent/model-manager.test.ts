import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DesiredNodeModel, ModelStatusFrame } from '@meshwork/protocol'
import type { InferenceEngine, LoadedModel } from '../inference/inference-engine.ts'
import { startModelFileServer, type ModelFileServer } from '../test-support/model-file-server.ts'
import { ModelManager, retryDelay } from './model-manager.ts'

/** An engine without files whose loads fail until `healthy` is set. */
function fakeEngine() {
  const calls = { load: 0, unload: 0 }
  let healthy = false
  const engine: InferenceEngine = {
    info: { kind: 'openai', version: null, backend: 'upstream' },
    needsModelFile: false,
    async load(ref) {
      calls.load++
      if (!healthy) throw new Error('upstream is down')
      const model: LoadedModel = {
        ref,
        generate: async (_req, o) => (
          o.onText('a b'),
          { tokensInput: 1, tokensOutput: 2, stopReason: 'stop' }
        ),
        unload: async () => void calls.unload++,
      }
      return model
    },
    describeGpu: async () => null,
    describe: async () => engine.info,
    dispose: async () => {},
  }
  return { engine, calls, heal: () => (healthy = true) }
}

const entry = (over: Partial<DesiredNodeModel> = {}): DesiredNodeModel => ({
  id: 'nm',
  model: { id: 'm', name: 'm', file_name: 'm.gguf', file_size_bytes: 1, sha256: 'd'.repeat(64) },
  requested_download: true,
  requested_serving: true,
  ...over,
})

describe('ModelManager', () => {
  let dir = ''
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mw-mm-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('reports a failed load once, retries only when asked again, unloads on removal', async () => {
    const { engine, calls, heal } = fakeEngine()
    const seen: ModelStatusFrame[] = []
    const mm = new ModelManager({
      modelsDir: dir,
      engine,
      downloadUrl: () => 'http://127.0.0.1:9/none',
      downloadHeaders: {},
      onStatus: (s) => seen.push(s),
    })
    mm.apply([entry()])
    await mm.idle()
    expect(calls.load).toBe(1)
    expect(seen.at(-1)).toMatchObject({ is_serving: false, error_message: 'upstream is down' })

    mm.apply([entry()]) // the same desired state again: no retry loop
    await mm.idle()
    expect(calls.load).toBe(1)

    heal()
    mm.apply([entry({ requested_serving: false })])
    mm.apply([entry()])
    await mm.idle()
    expect(calls.load).toBe(2)
    expect(seen.at(-1)).toMatchObject({ is_serving: true, error_message: '' })
    expect(mm.serving('m')).not.toBeNull()

    mm.apply([])
    await mm.idle()
    expect(calls.unload).toBe(1)
    expect(mm.serving('m')).toBeNull()
    expect(mm.statuses()).toEqual([])
  })

  it('puts an unsafe catalogue file name into error_message instead of touching the disk', async () => {
    const { engine } = fakeEngine()
    const seen: ModelStatusFrame[] = []
    const mm = new ModelManager({
      modelsDir: dir,
      engine: { ...engine, needsModelFile: true },
      downloadUrl: () => 'http://127.0.0.1:9/none',
      downloadHeaders: {},
      onStatus: (s) => seen.push(s),
    })
    // Traversal, a Windows path, a NUL (every try would fail), another download's partial file.
    for (const name of ['../escape.gguf', '..\\escape.gguf', 'm\u0000.gguf', 'other.gguf.part']) {
      const bad = entry({ id: `nm ${name}`, requested_serving: false })
      bad.model.file_name = name
      mm.apply([bad])
      await mm.idle()
      expect(seen.at(-1)?.error_message).toMatch(/Unsafe model file name/)
      expect(seen.at(-1)?.is_downloaded).toBe(false)
    }
  })
})

describe('ModelManager downloads that recover', () => {
  const bytes = randomBytes(100_000)
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  let dir = ''
  let files: ModelFileServer
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mw-mm-dl-'))
    files = await startModelFileServer({ '/m1': bytes })
  })
  afterAll(async () => {
    await files.close()
    await rm(dir, { recursive: true, force: true })
  })

  const wanted = (over: Partial<DesiredNodeModel> = {}): DesiredNodeModel => ({
    id: 'nm1',
    model: {
      id: 'm1',
      name: 'tiny',
      file_name: 'tiny.gguf',
      file_size_bytes: bytes.length,
      sha256,
    },
    requested_download: true,
    requested_serving: false,
    ...over,
  })

  function manager(seen: ModelStatusFrame[]) {
    const { engine } = fakeEngine()
    return new ModelManager({
      modelsDir: dir,
      engine: { ...engine, needsModelFile: true },
      downloadUrl: (id) => `${files.url}/${id}`,
      downloadHeaders: {},
      onStatus: (s) => seen.push(s),
      progressIntervalMs: 0,
      downloadAttempts: 1,
      retryInitialMs: 40,
      retryMaxMs: 200,
      random: () => 1,
    })
  }

  /** Waits until a reported status satisfies `check` (the manager reports every change). */
  async function statusWhere(seen: ModelStatusFrame[], check: (s: ModelStatusFrame) => boolean) {
    const deadline = Date.now() + 10_000
    while (!seen.some(check)) {
      if (Date.now() > deadline) throw new Error(`no such status in ${JSON.stringify(seen)}`)
      await new Promise((r) => setTimeout(r, 10))
    }
    return seen.find(check)!
  }

  it('tries a failing source again by itself and says why meanwhile', async () => {
    const message = 'The model source could not be reached: host not found (huggingface.co).'
    files.failNext(3, 502, { status: 502, message, data: {} })
    const seen: ModelStatusFrame[] = []
    const mm = manager(seen)
    const before = files.requests.length
    mm.apply([wanted()])
    const done = await statusWhere(seen, (s) => s.is_downloaded)
    expect(done).toMatchObject({ download_progress: 100, error_message: '' })
    expect(files.requests.length - before).toBe(4)
    const errors = seen.map((s) => s.error_message).filter(Boolean)
    expect(errors).toEqual([
      `Download failed: ${message} (HTTP 502 Bad Gateway) Retrying in 1 s.`,
      `Download failed: ${message} (HTTP 502 Bad Gateway) Retrying in 1 s.`,
      `Download failed: ${message} (HTTP 502 Bad Gateway) Retrying in 1 s.`,
    ])
    await mm.dispose()
  })

  it('waits for the owner after a refusal, and the Retry token tries again at once', async () => {
    await rm(join(dir, 'tiny.gguf'), { force: true })
    files.failNext(1, 404, {
      status: 404,
      message: "The requested resource wasn't found.",
      data: {},
    })
    const seen: ModelStatusFrame[] = []
    const mm = manager(seen)
    mm.apply([wanted({ retry: '' })])
    await mm.idle()
    expect(seen.at(-1)).toMatchObject({
      is_downloaded: false,
      error_message: "Download failed: The requested resource wasn't found. (HTTP 404 Not Found)",
    })
    const asked = files.requests.length
    await new Promise((r) => setTimeout(r, 300)) // longer than any backoff: nothing happens
    mm.apply([wanted({ retry: '' })])
    await mm.idle()
    expect(files.requests.length).toBe(asked)
    mm.apply([wanted({ retry: '2026-11-23 10:00:00.000Z' })])
    await statusWhere(seen, (s) => s.is_downloaded)
    expect(seen.at(-1)).toMatchObject({ is_downloaded: true, error_message: '' })
    await mm.dispose()
  })

  it('drops the reason when the owner cancels a failed download', async () => {
    await rm(join(dir, 'tiny.gguf'), { force: true })
    files.failNext(1, 404, { status: 404, message: 'gone', data: {} })
    const seen: ModelStatusFrame[] = []
    const mm = manager(seen)
    mm.apply([wanted()])
    await mm.idle()
    expect(seen.at(-1)?.error_message).toMatch(/gone/)
    mm.apply([wanted({ requested_download: false })])
    await mm.idle()
    expect(seen.at(-1)).toMatchObject({ is_downloaded: false, error_message: '' })
    // Downloading again after the cancel works (the web app re-asks on the same record).
    mm.apply([wanted()])
    await statusWhere(seen, (s) => s.is_downloaded)
    await mm.dispose()
  })
})

describe('retryDelay', () => {
  it('doubles from 5 s to at most 5 minutes, jittered in the upper half', () => {
    const top = (n: number) => retryDelay(n, { random: () => 1 })
    const bottom = (n: number) => retryDelay(n, { random: () => 0 })
    expect([0, 1, 2, 3, 4, 5, 6, 7, 30].map(top)).toEqual([
      5000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000,
    ])
    expect([0, 1, 6].map(bottom)).toEqual([2500, 5000, 150_000])
  })
})

describe('ModelManager, one file for two node models', () => {
  it('lets a removed node model finish deleting before a new one of the same file checks it', async () => {
    const bytes = randomBytes(50_000)
    const sha256 = createHash('sha256').update(bytes).digest('hex')
    const dir = await mkdtemp(join(tmpdir(), 'mw-mm-same-'))
    const files = await startModelFileServer({ '/m1': bytes })
    try {
      const seen: ModelStatusFrame[] = []
      const { engine } = fakeEngine()
      const mm = new ModelManager({
        modelsDir: dir,
        engine: { ...engine, needsModelFile: true },
        downloadUrl: (id) => `${files.url}/${id}`,
        downloadHeaders: {},
        onStatus: (s) => seen.push(s),
      })
      const model = {
        id: 'm1',
        name: 'x',
        file_name: 'x.gguf',
        file_size_bytes: bytes.length,
        sha256,
      }
      mm.apply([{ id: 'old', model, requested_download: true, requested_serving: false }])
      await mm.idle()
      expect(seen.at(-1)).toMatchObject({ node_model_id: 'old', is_downloaded: true })
      const asked = files.requests.length
      // The owner deleted the model and asked for it again: one frame, old gone, new there.
      mm.apply([{ id: 'new', model, requested_download: true, requested_serving: false }])
      await mm.idle()
      const last = seen.filter((s) => s.node_model_id === 'new').at(-1)
      expect(last).toMatchObject({ is_downloaded: true, download_progress: 100 })
      // The file was deleted with the old node model and downloaded again for the new one.
      expect(files.requests.length).toBe(asked + 1)
      const { readFile } = await import('node:fs/promises')
      expect((await readFile(join(dir, 'x.gguf'))).equals(bytes)).toBe(true)
      await mm.dispose()
    } finally {
      await files.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
