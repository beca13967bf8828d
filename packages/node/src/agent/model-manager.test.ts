import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DesiredNodeModel, ModelStatusFrame } from '@meshwork/protocol'
import type { InferenceEngine, LoadedModel } from '../inference/inference-engine.ts'
import { ModelManager } from './model-manager.ts'

/** An engine without files whose loads fail until `healthy` is set. */
function fakeEngine() {
  const calls = { load: 0, unload: 0 }
  let healthy = false
  const engine: InferenceEngine = {
    info: { kind: 'openai', version: null },
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
    const bad = entry({ requested_serving: false })
    bad.model.file_name = '../escape.gguf'
    mm.apply([bad])
    await mm.idle()
    expect(seen.at(-1)?.error_message).toMatch(/Unsafe model file name/)
    expect(seen.at(-1)?.is_downloaded).toBe(false)
  })
})
