/**
 * @module Pins a catalogue model's size and sha256 the first time a node asks for it, from its
 * source's response headers (resolve-model-source.ts), so a model can be added with its URL alone.
 * A node is only ever sent pinned models (a node cannot verify a file without its sha256); while
 * its model cannot be pinned, the owner's node_models row says why and when the next try comes,
 * and Retry (retry_requested_at) tries at once. Tries are per model, one at a time, with backoff
 * (10 s doubling to 10 minutes).
 */
import type { CoreApp } from '../app.ts'
import { requireCollection } from '../collections/registry.ts'
import { server as superuser } from '../records/caller.ts'
import { resolveModelSource, type ResolvedSource } from './resolve-model-source.ts'
import { background } from '../../tools/background.ts'

/** What the owner reads on the node model while its model is not pinned. */
export const PIN_FAILURE_PREFIX = 'Could not read the size and checksum of'

export interface ModelPinsOptions {
  resolve?: (url: string) => Promise<ResolvedSource>
  /** First and longest wait between tries of one model (ms). */
  retryInitialMs?: number
  retryMaxMs?: number
}

interface Failure {
  failures: number
  timer: NodeJS.Timeout | null
  /** The owners' retry_requested_at values when it failed: a new one means "try now". */
  retryTokens: Set<string>
}

const pinned = (sha: unknown, size: unknown) =>
  /^[0-9a-f]{64}$/i.test(String(sha ?? '')) && Number(size) > 0

export class ModelPins {
  readonly #inFlight = new Map<string, Promise<void>>()
  readonly #failures = new Map<string, Failure>()
  #closed = false

  constructor(
    private readonly core: CoreApp,
    /** A node whose models may have changed: push its desired state again. */
    private readonly retryNode: (nodeId: string) => void,
    private readonly options: ModelPinsOptions = {},
  ) {}

  /** Pins every unpinned model this node wants downloaded (in the background). */
  async pinFor(nodeId: string): Promise<void> {
    if (this.#closed) return
    const rows = await this.core.database.db
      .selectFrom('node_models as nm')
      .innerJoin('models as m', 'm.id', 'nm.model')
      .select([
        'm.id as model',
        'm.sha256',
        'm.file_size_bytes',
        'm.source_url',
        'nm.retry_requested_at',
      ])
      .where('nm.node', '=', nodeId)
      .where('nm.requested_download', '=', 1)
      .execute()
    for (const r of rows) {
      if (pinned(r.sha256, r.file_size_bytes) || !r.source_url) continue
      const model = String(r.model)
      const failure = this.#failures.get(model)
      const askedAgain = failure && !failure.retryTokens.has(String(r.retry_requested_at ?? ''))
      if (failure?.timer && !askedAgain) continue
      background(this.#pin(model, nodeId), `pinning model ${model}`)
    }
  }

  close(): void {
    this.#closed = true
    for (const f of this.#failures.values()) if (f.timer) clearTimeout(f.timer)
  }

  #pin(modelId: string, nodeId: string): Promise<void> {
    let running = this.#inFlight.get(modelId)
    if (!running) {
      running = this.#resolveAndSave(modelId, nodeId).finally(() => this.#inFlight.delete(modelId))
      this.#inFlight.set(modelId, running)
    }
    return running
  }

  async #resolveAndSave(modelId: string, nodeId: string): Promise<void> {
    const db = this.core.database.db
    const model = await db
      .selectFrom('models')
      .select(['name', 'display_name', 'source_url', 'sha256', 'file_size_bytes', 'file_name'])
      .where('id', '=', modelId)
      .executeTakeFirst()
    if (!model || pinned(model.sha256, model.file_size_bytes)) return
    const label = String(model.display_name || model.name)
    try {
      const found = await (this.options.resolve ?? resolveModelSource)(String(model.source_url))
      if (!found.sha256) {
        throw new Error(
          `its source publishes no sha256 (an admin can add it: model-edit ${model.name} --sha256 …)`,
        )
      }
      this.#forget(modelId)
      if (this.#closed) return
      await this.core.records.update(superuser, requireCollection('models'), modelId, {
        file_size_bytes: found.sizeBytes,
        sha256: found.sha256,
        ...(model.file_name ? {} : { file_name: found.fileName }),
      })
      await this.#report(modelId, '')
    } catch (err) {
      if (this.#closed) return
      const why = err instanceof Error ? err.message : String(err)
      const failure = this.#failures.get(modelId) ?? {
        failures: 0,
        timer: null,
        retryTokens: new Set<string>(),
      }
      if (failure.timer) clearTimeout(failure.timer)
      const wait = Math.min(
        this.options.retryMaxMs ?? 600_000,
        (this.options.retryInitialMs ?? 10_000) * 2 ** Math.min(failure.failures, 20),
      )
      failure.failures++
      const asking = await this.core.database.db
        .selectFrom('node_models')
        .select('retry_requested_at')
        .where('model', '=', modelId)
        .execute()
      failure.retryTokens = new Set(asking.map((r) => String(r.retry_requested_at ?? '')))
      failure.timer = setTimeout(() => {
        failure.timer = null
        this.retryNode(nodeId)
      }, wait)
      failure.timer.unref()
      this.#failures.set(modelId, failure)
      await this.#report(
        modelId,
        `${PIN_FAILURE_PREFIX} ${label} from its source: ${why} Retrying in ${Math.round(wait / 1000)} s.`,
      )
    }
  }

  #forget(modelId: string): void {
    const failure = this.#failures.get(modelId)
    if (failure?.timer) clearTimeout(failure.timer)
    this.#failures.delete(modelId)
  }

  /**
   * Shows (or clears) the reason on every node model of this model waiting for it. Only rows
   * the node has not written to yet: the node's own report always wins.
   */
  async #report(modelId: string, message: string): Promise<void> {
    const rows = await this.core.database.db
      .selectFrom('node_models')
      .select(['id', 'error_message'])
      .where('model', '=', modelId)
      .where('requested_download', '=', 1)
      .where('is_downloaded', '=', 0)
      .execute()
    for (const row of rows) {
      const current = String(row.error_message ?? '')
      if (current === message) continue
      if (current && !current.startsWith(PIN_FAILURE_PREFIX)) continue
      await this.core.records
        .update(superuser, requireCollection('node_models'), String(row.id), {
          error_message: message,
        })
        .catch(() => undefined) // deleted meanwhile
    }
  }
}
