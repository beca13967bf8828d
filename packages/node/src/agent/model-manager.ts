/**
 * @module model-manager
 * Follows the coordinator's desired state of the node's models: download (resume, verify),
 * cancel, delete, load/serve with a measured speed, unload. Each node model runs one operation
 * at a time; after every operation the entry is reconciled again against its latest desired
 * state. Failures become `error_message`; nothing here throws at the caller.
 */
import { rm, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import type { DesiredNodeModel, ModelStatusFrame } from '@meshwork/protocol'
import type { InferenceEngine, LoadedModel } from '../inference/inference-engine.ts'
import { downloadModelFile, partialPath } from './download-model-file.ts'
import { measureTokensPerSecond } from './measure-tokens-per-second.ts'

export interface ModelManagerOptions {
  modelsDir: string
  engine: InferenceEngine
  /** Where model `id` is downloaded from, and the headers (node authorization) to send. */
  downloadUrl: (modelId: string) => string
  downloadHeaders: Record<string, string>
  onStatus: (status: ModelStatusFrame) => void
  progressIntervalMs?: number
}

type Op = 'check' | 'download' | 'delete' | 'load' | 'unload'
type Status = Omit<ModelStatusFrame, 'type' | 'node_model_id'>

interface Entry {
  id: string
  desired: DesiredNodeModel | null
  status: Status
  op: Op | null
  checked: boolean
  abort: AbortController | null
  loaded: LoadedModel | null
  /** Last known file path, kept so a removed node model's file can still be deleted. */
  file: string | null
  /** Set after a failure; cleared when the owner asks again (flag goes false, then true). */
  downloadFailed: boolean
  loadFailed: boolean
  settled: Promise<void>
}

/** Thrown for a catalogue file name that would escape the models directory. */
export class UnsafeFileNameError extends Error {
  override name = 'UnsafeFileNameError'
}

export class ModelManager {
  readonly #o: ModelManagerOptions
  readonly #entries = new Map<string, Entry>()
  #disposed = false

  constructor(options: ModelManagerOptions) {
    this.#o = options
  }

  /** Applies the full desired set; node models missing from it are unloaded and deleted. */
  apply(desired: DesiredNodeModel[]): void {
    const seen = new Set<string>()
    for (const d of desired) {
      seen.add(d.id)
      let e = this.#entries.get(d.id)
      if (!e) {
        e = newEntry(d.id)
        this.#entries.set(d.id, e)
      }
      if (!d.requested_download) e.downloadFailed = false
      if (!d.requested_serving) e.loadFailed = false
      e.desired = d
      this.#reconcile(e)
    }
    for (const e of this.#entries.values()) {
      if (!seen.has(e.id) && e.desired) {
        e.desired = null
        this.#reconcile(e)
      }
    }
  }

  /** Current status of every known node model (sent again after a reconnect). */
  statuses(): ModelStatusFrame[] {
    return [...this.#entries.values()].filter((e) => e.desired).map(frameOf)
  }

  /** The loaded model serving catalogue model `modelId`, if any. */
  serving(modelId: string): LoadedModel | null {
    for (const e of this.#entries.values()) {
      if (e.status.is_serving && e.loaded && e.desired?.model.id === modelId) return e.loaded
    }
    return null
  }

  /** Resolves when no operation is running (tests and shutdown). */
  async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.#entries.values()].filter((e) => e.op)
      if (busy.length === 0) return
      await Promise.all(busy.map((e) => e.settled))
    }
  }

  /** Stops downloads (keeping `.part` files for resume), unloads everything. */
  async dispose(): Promise<void> {
    this.#disposed = true
    for (const e of this.#entries.values()) e.abort?.abort()
    await this.idle()
    await Promise.all(
      [...this.#entries.values()].map((e) => e.loaded?.unload().catch(() => undefined)),
    )
  }

  #reconcile(e: Entry): void {
    if (this.#disposed) return
    const d = e.desired
    if (e.op === 'download' && !d?.requested_download) e.abort?.abort()
    if (e.op) return
    const s = e.status
    const needsFile = this.#o.engine.needsModelFile
    if (!d) {
      if (e.loaded) return this.#run(e, 'unload')
      if (s.is_downloaded || s.download_progress > 0) return this.#run(e, 'delete')
      this.#entries.delete(e.id)
      return
    }
    if (!e.checked) return this.#run(e, 'check')
    if (e.loaded && !d.requested_serving) return this.#run(e, 'unload')
    if (d.requested_download && !s.is_downloaded && !e.downloadFailed) {
      if (needsFile) return this.#run(e, 'download')
      // Nothing to fetch for an upstream server; go on to serving in the same pass.
      this.#set(e, { is_downloaded: true, download_progress: 100 })
    }
    if (!d.requested_download && !d.requested_serving && !e.loaded && s.is_downloaded) {
      if (!needsFile) return this.#set(e, { is_downloaded: false, download_progress: 0 })
      return this.#run(e, 'delete')
    }
    if (d.requested_serving && !e.loaded && !e.loadFailed && (s.is_downloaded || !needsFile)) {
      return this.#run(e, 'load')
    }
  }

  #run(e: Entry, op: Op): void {
    e.op = op
    e.settled = this.#perform(e, op)
      .catch((err: unknown) => this.#fail(e, op, err))
      .finally(() => {
        e.op = null
        this.#reconcile(e)
      })
  }

  async #perform(e: Entry, op: Op): Promise<void> {
    // Marked first: an unsafe file name throws below, and must not make the check repeat forever.
    if (op === 'check') e.checked = true
    const model = e.desired?.model
    const path = model ? this.#path(model.file_name) : null
    if (path) e.file = path
    switch (op) {
      case 'check': {
        if (!path || !this.#o.engine.needsModelFile) return
        const full = await stat(path).catch(() => null)
        if (full && (model!.file_size_bytes === 0 || full.size === model!.file_size_bytes)) {
          return this.#set(e, { is_downloaded: true, download_progress: 100 })
        }
        const part = await stat(partialPath(this.#o.modelsDir, basename(path))).catch(() => null)
        if (part && model!.file_size_bytes > 0) {
          this.#set(e, { download_progress: pct(part.size, model!.file_size_bytes) })
        }
        return
      }
      case 'download': {
        const ac = new AbortController()
        e.abort = ac
        this.#set(e, { error_message: '' })
        try {
          await downloadModelFile({
            url: this.#o.downloadUrl(model!.id),
            headers: this.#o.downloadHeaders,
            directory: this.#o.modelsDir,
            fileName: basename(path!),
            sha256: model!.sha256,
            sizeBytes: model!.file_size_bytes,
            signal: ac.signal,
            progressIntervalMs: this.#o.progressIntervalMs ?? 250,
            onProgress: (p) => this.#set(e, { download_progress: pct(p, 100) }),
          })
        } catch (err) {
          if (!ac.signal.aborted) throw err
          // Stopped by shutdown: keep the part to resume. Stopped by the owner: clean up.
          if (this.#disposed) return
          await rm(partialPath(this.#o.modelsDir, basename(path!)), { force: true })
          return this.#set(e, { download_progress: 0 })
        } finally {
          e.abort = null
        }
        return this.#set(e, { is_downloaded: true, download_progress: 100 })
      }
      case 'delete':
        if (e.file) {
          await rm(e.file, { force: true })
          await rm(partialPath(this.#o.modelsDir, basename(e.file)), { force: true })
        }
        return this.#set(e, { is_downloaded: false, download_progress: 0, error_message: '' })
      case 'load': {
        this.#set(e, { error_message: '' })
        const loaded = await this.#o.engine.load({
          id: model!.id,
          name: model!.name,
          path: this.#o.engine.needsModelFile ? path : null,
        })
        const tps = await measureTokensPerSecond(loaded).catch(async (err: unknown) => {
          await loaded.unload()
          throw err
        })
        e.loaded = loaded
        return this.#set(e, { is_serving: true, tokens_per_second: tps })
      }
      case 'unload': {
        const loaded = e.loaded
        e.loaded = null
        this.#set(e, { is_serving: false, tokens_per_second: 0 })
        await loaded?.unload()
        return
      }
    }
  }

  #fail(e: Entry, op: Op, err: unknown): void {
    if (op === 'download') e.downloadFailed = true
    if (op === 'load') e.loadFailed = true
    const message = err instanceof Error ? err.message : String(err)
    this.#set(e, { error_message: message, ...(op === 'download' ? { download_progress: 0 } : {}) })
  }

  #path(fileName: string): string {
    const name = basename(fileName)
    if (name !== fileName || name === '' || name.startsWith('.')) {
      throw new UnsafeFileNameError(`Unsafe model file name: ${fileName}`)
    }
    return join(this.#o.modelsDir, name)
  }

  #set(e: Entry, patch: Partial<Status>): void {
    const next = { ...e.status, ...patch }
    const changed = (Object.keys(next) as (keyof Status)[]).some((k) => next[k] !== e.status[k])
    e.status = next
    if (changed && e.desired) this.#o.onStatus(frameOf(e))
  }
}

function newEntry(id: string): Entry {
  return {
    id,
    desired: null,
    status: {
      is_downloaded: false,
      download_progress: 0,
      is_serving: false,
      tokens_per_second: 0,
      error_message: '',
    },
    op: null,
    checked: false,
    abort: null,
    loaded: null,
    file: null,
    downloadFailed: false,
    loadFailed: false,
    settled: Promise.resolve(),
  }
}

function frameOf(e: Entry): ModelStatusFrame {
  return { type: 'model_status', node_model_id: e.id, ...e.status }
}

function pct(value: number, total: number): number {
  return Math.min(100, Math.round((value / total) * 1000) / 10)
}
