/**
 * @module model-manager
 * Follows the coordinator's desired state of the node's models: download (resume, verify),
 * cancel, delete, load/serve with a measured speed, unload. Each node model runs one operation
 * at a time; after every operation the entry is reconciled again against its latest desired
 * state. Failures become `error_message`; nothing here throws at the caller.
 *
 * A download that fails for a reason that may pass (the network, the coordinator or the model
 * source being down: 5xx, 408, 429, a dropped connection) is tried again by itself with
 * exponential backoff (5 s, 10 s, 20 s, ... up to 5 minutes, with jitter); the reason and the wait
 * are in `error_message`. Other failures (checksum mismatch, 4xx, disk) wait for the owner: a new
 * `retry` token in the desired state (the Retry button), or a cancel and a new request.
 *
 * A file already on disk is used only when it is the catalogue's (verify-model-file): its sidecar
 * vouches for it, or it is hashed and matches. One that does not is removed and, when the owner
 * wants it downloaded, downloaded again. This is decided when a node model is first seen (the
 * start) and again before each load.
 */
import { rm, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import type { DesiredNodeModel, ModelStatusFrame } from '@meshwork/protocol'
import type { InferenceEngine, LoadedModel } from '../inference/inference-engine.ts'
import {
  ChecksumMismatchError,
  DownloadHttpError,
  downloadModelFile,
  NotEnoughDiskSpaceError,
  partialPath,
} from './download-model-file.ts'
import { measureTokensPerSecond } from './measure-tokens-per-second.ts'
import { removeModelFile, verifyModelFile, type HashFile } from './verify-model-file.ts'

export interface ModelManagerOptions {
  modelsDir: string
  engine: InferenceEngine
  /** Where model `id` is downloaded from, and the headers (node authorization) to send. */
  downloadUrl: (modelId: string) => string
  downloadHeaders: Record<string, string>
  onStatus: (status: ModelStatusFrame) => void
  progressIntervalMs?: number
  /** Tries within one download (a broken transfer resumes at once); default 3. */
  downloadAttempts?: number
  /** Backoff of automatic download retries: first wait and longest wait (ms). */
  retryInitialMs?: number
  retryMaxMs?: number
  random?: () => number
  /** Hashes a model file found on disk (default: a streaming sha256); tests count the calls. */
  hashFile?: HashFile
  /** A file on disk was not the catalogue's and was removed (it is downloaded again): why. */
  onFileRemoved?: (nodeModelId: string, reason: string) => void
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
  /** Set after a failure; cleared by a new retry token, a cancel, or the backoff timer. */
  downloadFailed: boolean
  loadFailed: boolean
  /** Transient download failures in a row (the backoff grows with them). */
  failures: number
  retryTimer: NodeJS.Timeout | null
  /** The last `retry` token seen from the owner. */
  retryToken: string
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
    const wanted = new Set(desired.map((d) => d.id))
    // Removals first: their unload/delete must be under way before a new node model of the same
    // file looks at the disk (see #sameFileBusy).
    for (const e of this.#entries.values()) {
      if (!wanted.has(e.id) && e.desired) {
        e.desired = null
        this.#clearFailure(e)
        this.#reconcile(e)
      }
    }
    for (const d of desired) {
      let e = this.#entries.get(d.id)
      if (!e) {
        e = newEntry(d.id, d.retry ?? '')
        this.#entries.set(d.id, e)
      }
      if ((d.retry ?? '') !== e.retryToken) {
        // The owner asked to try again now: forget failures and the backoff.
        e.retryToken = d.retry ?? ''
        this.#clearFailure(e)
        e.loadFailed = false
      }
      if (!d.requested_download && (e.downloadFailed || e.retryTimer)) {
        // A cancelled download that had failed: its reason goes with it.
        this.#clearFailure(e)
        if (!e.status.is_downloaded) this.#set(e, { error_message: '' }, d)
      }
      if (!d.requested_serving) e.loadFailed = false
      e.desired = d
      this.#reconcile(e)
    }
  }

  /** Current status of every known node model (sent again after a reconnect). */
  statuses(): ModelStatusFrame[] {
    return [...this.#entries.values()].filter((e) => e.desired).map(frameOf)
  }

  /** The catalogue model a node model is for (as last desired), for log lines that name it. */
  modelOf(nodeModelId: string): DesiredNodeModel['model'] | undefined {
    return this.#entries.get(nodeModelId)?.desired?.model
  }

  /** The catalogue model with id `modelId`, if any node model is for it. */
  catalogueModel(modelId: string): DesiredNodeModel['model'] | undefined {
    for (const e of this.#entries.values())
      if (e.desired?.model.id === modelId) return e.desired.model
    return undefined
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
    for (const e of this.#entries.values()) {
      e.abort?.abort()
      this.#clearFailure(e)
    }
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
    // One file, one operation: a removed node model may still be deleting the file a new node
    // model of the same catalogue model is about to check or download.
    const other = this.#sameFileBusy(e)
    if (other) {
      other.settled
        .then(() => this.#reconcile(e))
        .catch((err: unknown) => console.error('model reconcile failed:', err))
      return
    }
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
        if (await this.#fileUsable(e, path, model!)) {
          return this.#set(e, { is_downloaded: true, download_progress: 100 })
        }
        if (this.#disposed) return
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
            attempts: this.#o.downloadAttempts,
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
        e.failures = 0
        return this.#set(e, { is_downloaded: true, download_progress: 100 })
      }
      case 'delete':
        if (e.file) {
          await removeModelFile(e.file)
          await rm(partialPath(this.#o.modelsDir, basename(e.file)), { force: true })
        }
        return this.#set(e, { is_downloaded: false, download_progress: 0, error_message: '' })
      case 'load': {
        this.#set(e, { error_message: '' })
        // The file may have changed since it was checked; unusable, it is gone and downloaded again.
        if (this.#o.engine.needsModelFile && !(await this.#fileUsable(e, path!, model!))) {
          if (this.#disposed) return
          return this.#set(e, { is_downloaded: false, download_progress: 0 })
        }
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
    if (op === 'load') e.loadFailed = true
    let message = err instanceof Error ? err.message : String(err)
    if (op === 'download') {
      e.downloadFailed = true
      if (isTransient(err) && !this.#disposed && e.desired?.requested_download) {
        const wait = this.#backoff(e.failures++)
        message = `${message} Retrying in ${formatWait(wait)}.`
        e.retryTimer = setTimeout(() => {
          e.retryTimer = null
          e.downloadFailed = false
          this.#reconcile(e)
        }, wait)
        e.retryTimer.unref?.()
      }
    }
    // A checksum mismatch removed the partial file: nothing of it is left to resume.
    const progress = err instanceof ChecksumMismatchError ? { download_progress: 0 } : {}
    this.#set(e, { error_message: message, ...progress })
  }

  /** Whether the file at `path` is `model`'s; one that is not has been removed. */
  async #fileUsable(e: Entry, path: string, model: DesiredNodeModel['model']): Promise<boolean> {
    if (!model.sha256) {
      // Not pinned (only a library caller can pass this: the protocol requires a sha256): the
      // size decides, as before sidecars.
      const full = await stat(path).catch(() => null)
      return !!full && (model.file_size_bytes === 0 || full.size === model.file_size_bytes)
    }
    const ac = new AbortController()
    e.abort = ac
    try {
      const verdict = await verifyModelFile({
        path,
        sha256: model.sha256,
        sizeBytes: model.file_size_bytes,
        hashFile: this.#o.hashFile,
        signal: ac.signal,
      })
      if (verdict.state === 'mismatch') this.#o.onFileRemoved?.(e.id, verdict.reason)
      return verdict.state === 'trusted' || verdict.state === 'hashed'
    } catch (err) {
      if (this.#disposed) return false // stopped by shutdown mid-hash: decided next start
      throw err
    } finally {
      e.abort = null
    }
  }

  #sameFileBusy(e: Entry): Entry | undefined {
    const name = e.desired?.model.file_name ?? (e.file ? basename(e.file) : null)
    if (!name) return undefined
    for (const o of this.#entries.values()) {
      if (o === e || !o.op) continue
      const otherName = o.desired?.model.file_name ?? (o.file ? basename(o.file) : null)
      if (otherName === name) return o
    }
    return undefined
  }

  #clearFailure(e: Entry): void {
    if (e.retryTimer) clearTimeout(e.retryTimer)
    e.retryTimer = null
    e.failures = 0
    e.downloadFailed = false
  }

  #backoff(failures: number): number {
    return retryDelay(failures, {
      initialMs: this.#o.retryInitialMs,
      maxMs: this.#o.retryMaxMs,
      random: this.#o.random,
    })
  }

  #path(fileName: string): string {
    const name = basename(fileName)
    // Also refused: a backslash (a separator on Windows), NUL and control characters (no file
    // system takes them: every try would fail, retried for ever) and `.part`, the name of another
    // download's unverified bytes.
    const odd = [...name].some((c) => c < ' ' || c === '\\') || name.endsWith('.part')
    if (name !== fileName || name === '' || name.startsWith('.') || odd) {
      throw new UnsafeFileNameError(`Unsafe model file name: ${fileName}`)
    }
    return join(this.#o.modelsDir, name)
  }

  #set(e: Entry, patch: Partial<Status>, desired = e.desired): void {
    const next = { ...e.status, ...patch }
    const changed = (Object.keys(next) as (keyof Status)[]).some((k) => next[k] !== e.status[k])
    e.status = next
    if (changed && desired) this.#o.onStatus(frameOf(e))
  }
}

/** A failure that may pass by itself: worth trying again without the owner. */
export function isTransient(err: unknown): boolean {
  if (
    err instanceof ChecksumMismatchError ||
    err instanceof UnsafeFileNameError ||
    err instanceof NotEnoughDiskSpaceError
  )
    return false
  if (err instanceof DownloadHttpError) {
    return err.status >= 500 || err.status === 408 || err.status === 429 || err.status === 0
  }
  // Disk problems need a person; anything else (fetch failed, reset, timeout) is the network.
  const code = (err as { code?: unknown } | null)?.code
  return !(typeof code === 'string' && /^E(NOSPC|ACCES|PERM|ROFS|DQUOT|ISDIR|NOTDIR)$/.test(code))
}

/**
 * The wait before automatic retry number `failures + 1`: doubling from `initialMs` (5 s) up to
 * `maxMs` (5 min), jittered within the upper half so many nodes do not retry in step.
 */
export function retryDelay(
  failures: number,
  o: { initialMs?: number; maxMs?: number; random?: () => number } = {},
): number {
  const ceiling = Math.min(o.maxMs ?? 300_000, (o.initialMs ?? 5000) * 2 ** Math.min(failures, 20))
  return Math.round(ceiling / 2 + (ceiling / 2) * (o.random ?? Math.random)())
}

function formatWait(ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000))
  return s < 90 ? `${s} s` : `${Math.round(s / 60)} min`
}

function newEntry(id: string, retryToken: string): Entry {
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
    failures: 0,
    retryTimer: null,
    retryToken,
    settled: Promise.resolve(),
  }
}

function frameOf(e: Entry): ModelStatusFrame {
  return { type: 'model_status', node_model_id: e.id, ...e.status }
}

function pct(value: number, total: number): number {
  return Math.min(100, Math.round((value / total) * 1000) / 10)
}
