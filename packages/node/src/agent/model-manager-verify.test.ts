/**
 * A model file already on disk is used only when it is the catalogue's: real files in a temp
 * directory, the real stories260K GGUF served over HTTP, and an engine that records the sha256 of
 * every file it is asked to load (what the node would have served).
 */
import { createHash } from 'node:crypto'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { DesiredNodeModel, ModelStatusFrame } from '@meshwork/protocol'
import type { InferenceEngine } from '../inference/inference-engine.ts'
import { startModelFileServer, type ModelFileServer } from '../test-support/model-file-server.ts'
import { ModelManager } from './model-manager.ts'
import { sha256OfFile } from './sha256-of-file.ts'
import { sidecarPath } from './verify-model-file.ts'

const MODELS = new URL('../../../../../shared/models/', import.meta.url).pathname
const SHA = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d'
const touchLike = (from: string, to: string) =>
  new Promise<void>((ok, fail) => execFile('touch', ['-r', from, to], (e) => (e ? fail(e) : ok())))
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

/** An engine that needs files and records the sha256 of each file it loads. */
function recordingEngine(loadedHashes: string[]): InferenceEngine {
  const engine: InferenceEngine = {
    info: { kind: 'llama.cpp', version: null, backend: 'cpu' },
    needsModelFile: true,
    async load(ref) {
      loadedHashes.push(sha256(await readFile(ref.path!)))
      return {
        ref,
        generate: async (_req, o) => (
          o.onText('a b'),
          { tokensInput: 1, tokensOutput: 2, stopReason: 'stop' }
        ),
        unload: async () => {},
      }
    },
    describeGpu: async () => null,
    describe: async () => engine.info,
    dispose: async () => {},
  }
  return engine
}

describe('ModelManager and model files already on disk', () => {
  let good: Buffer
  let files: ModelFileServer
  let dir = ''
  let file = ''
  const stories = (over: Partial<DesiredNodeModel> = {}): DesiredNodeModel => ({
    id: 'nm1',
    model: {
      id: 'm1',
      name: 'stories260K',
      file_name: 'stories260K.gguf',
      file_size_bytes: good.length,
      sha256: SHA,
    },
    requested_download: true,
    requested_serving: true,
    ...over,
  })

  beforeAll(async () => {
    good = await readFile(`${MODELS}stories260K.gguf`)
    expect(sha256(good)).toBe(SHA)
    files = await startModelFileServer({ '/m1': good })
  })
  afterAll(() => files.close())
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mw-mm-verify-'))
    file = join(dir, 'stories260K.gguf')
    return () => rm(dir, { recursive: true, force: true })
  })

  /** A fresh manager (an agent start) on `dir`, counting whole-file hashes. */
  async function start(desired = stories()) {
    const seen: ModelStatusFrame[] = []
    const loaded: string[] = []
    const hashes: string[] = []
    const removed: string[] = []
    const before = files.requests.length
    const mm = new ModelManager({
      modelsDir: dir,
      engine: recordingEngine(loaded),
      downloadUrl: (id) => `${files.url}/${id}`,
      downloadHeaders: {},
      onStatus: (s) => seen.push(s),
      downloadAttempts: 1,
      hashFile: (path, signal) => (hashes.push(path), sha256OfFile(path, signal)),
      onFileRemoved: (id, reason) => removed.push(`${id}: ${reason}`),
    })
    mm.apply([desired])
    await mm.idle()
    await mm.dispose()
    const downloads = files.requests.length - before
    return { seen, loaded, hashes, removed, downloads, last: seen.at(-1) }
  }

  const bad: [string, (b: Buffer) => Buffer][] = [
    ['random bytes', (b) => Buffer.from(b.map((x, i) => (x + i + 1) & 0xff))],
    [
      'one flipped byte',
      (b) => Buffer.from(b).fill(b[b.length >> 1] ^ 1, b.length >> 1, (b.length >> 1) + 1),
    ],
    [
      'truncated, then padded with zeros',
      (b) =>
        Buffer.concat([b.subarray(0, b.length >> 1), Buffer.alloc(b.length - (b.length >> 1))]),
    ],
  ]
  it.each(bad)('does not serve a right-size file of %s, and replaces it', async (_, corrupt) => {
    await writeFile(file, corrupt(good))
    expect((await stat(file)).size).toBe(good.length)
    const run = await start()
    expect(run.loaded).toEqual([SHA]) // only the catalogue's bytes were ever loaded
    expect(run.downloads).toBe(1)
    // Its owner is told why the model downloads again.
    expect(run.removed).toEqual([
      expect.stringMatching(/: stories260K\.gguf did not match its sha256: expected /),
    ])
    expect(run.last).toMatchObject({ is_downloaded: true, is_serving: true, error_message: '' })
    expect(sha256(await readFile(file))).toBe(SHA)
  })

  it('does not believe a sidecar once the file was rewritten in place with its mtime set back', async () => {
    await writeFile(file, good)
    const first = await start()
    expect(first.hashes).toHaveLength(1)
    // `touch -r` copies the timestamps to the nanosecond (Node's utimes cannot).
    const stamp = join(dir, 'stamp')
    await writeFile(stamp, '')
    await touchLike(file, stamp)
    await writeFile(file, bad[0][1](good)) // same inode, same size
    await touchLike(stamp, file)
    expect((await stat(file, { bigint: true })).mtimeNs).toBe(
      (await stat(stamp, { bigint: true })).mtimeNs,
    )
    const run = await start()
    expect(run.hashes).toHaveLength(1)
    expect(run.loaded).toEqual([SHA])
    expect(run.downloads).toBe(1)
  })

  it('does not believe a sidecar written for another file put in place by a rename', async () => {
    await writeFile(file, good)
    await start()
    const other = join(dir, 'other')
    await writeFile(other, bad[0][1](good))
    await touchLike(file, other)
    await rename(other, file)
    const run = await start()
    expect(run.loaded).toEqual([SHA])
    expect(run.downloads).toBe(1)
  })

  it('trusts a good file with a valid sidecar without hashing it, across starts', async () => {
    const first = await start() // downloads: the download verified the hash and wrote the sidecar
    expect(first.downloads).toBe(1)
    expect(first.hashes).toEqual([])
    for (let i = 0; i < 2; i++) {
      const run = await start()
      expect(run.hashes).toEqual([])
      expect(run.downloads).toBe(0)
      expect(run.loaded).toEqual([SHA])
      expect(run.last).toMatchObject({ is_downloaded: true, is_serving: true })
    }
  })

  it('hashes a good file without a sidecar once, and records the hash beside it', async () => {
    await writeFile(file, good)
    const run = await start()
    expect(run.hashes).toEqual([file])
    expect(run.downloads).toBe(0)
    expect(run.loaded).toEqual([SHA])
    expect(JSON.parse(await readFile(sidecarPath(file), 'utf8'))).toMatchObject({
      sha256: SHA,
      size: String(good.length),
    })
    expect((await start()).hashes).toEqual([])
  })

  it('recovers from a kill between the model file and its sidecar: hashed on the next start', async () => {
    await start()
    // What a kill after the rename leaves: the file in place, no sidecar, maybe a torn temp file.
    await rm(sidecarPath(file))
    await writeFile(`${sidecarPath(file)}.tmp`, '{"sha256":"27')
    const run = await start()
    expect(run.hashes).toEqual([file])
    expect(run.downloads).toBe(0)
    expect(run.last).toMatchObject({ is_downloaded: true, is_serving: true, error_message: '' })
    expect((await start()).hashes).toEqual([])
  })

  it('hashes again when the sidecar is torn, foreign or records another hash', async () => {
    await start()
    const real = await readFile(sidecarPath(file), 'utf8')
    for (const text of ['{"sha2', 'x'.repeat(10_000), real.replace(SHA, 'e'.repeat(64))]) {
      await writeFile(sidecarPath(file), text)
      const run = await start()
      expect(run.hashes).toEqual([file])
      expect(run.downloads).toBe(0)
      expect(run.loaded).toEqual([SHA])
    }
  })

  it('checks the file again before a load: one changed while the agent ran is replaced', async () => {
    const loaded: string[] = []
    const hashes: string[] = []
    const mm = new ModelManager({
      modelsDir: dir,
      engine: recordingEngine(loaded),
      downloadUrl: (id) => `${files.url}/${id}`,
      downloadHeaders: {},
      onStatus: () => {},
      hashFile: (path, signal) => (hashes.push(path), sha256OfFile(path, signal)),
    })
    const before = files.requests.length
    mm.apply([stories({ requested_serving: false })])
    await mm.idle()
    await writeFile(file, bad[0][1](good))
    mm.apply([stories()])
    await mm.idle()
    await mm.dispose()
    expect(hashes).toEqual([file])
    expect(loaded).toEqual([SHA])
    expect(files.requests.length - before).toBe(2)
  })

  it('removes the sidecar with the model, and never lists one as a model', async () => {
    await start()
    expect((await readdir(dir)).sort()).toEqual(['.stories260K.gguf.sha256', 'stories260K.gguf'])
    await writeFile(`${sidecarPath(file)}.tmp`, 'torn')
    const mm = new ModelManager({
      modelsDir: dir,
      engine: recordingEngine([]),
      downloadUrl: (id) => `${files.url}/${id}`,
      downloadHeaders: {},
      onStatus: () => {},
    })
    mm.apply([stories()])
    await mm.idle()
    mm.apply([]) // the owner removed the model
    await mm.idle()
    await mm.dispose()
    expect(await readdir(dir)).toEqual([])
  })

  it('keeps the size check alone for a model without a pinned sha256 (library callers only)', async () => {
    await writeFile(file, bad[0][1](good))
    const unpinned = stories()
    unpinned.model.sha256 = ''
    const run = await start(unpinned)
    expect(run.hashes).toEqual([])
    expect(run.downloads).toBe(0)
    expect(run.last).toMatchObject({ is_downloaded: true })
  })
})
