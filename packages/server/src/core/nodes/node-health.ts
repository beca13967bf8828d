/**
 * @module What the coordinator measures about nodes on real jobs, instead of believing them: the
 * speed it relayed (output tokens per second from acceptance to the end, kept per node model as a
 * moving average) and failures. Every failure (job_failed, an offer turned down, a stall, a drop)
 * costs reputation; a node that fails several jobs in a row is benched for a cool-down that doubles
 * each time it is benched again, and gets no jobs until it ends. A node's own error text is kept
 * for its owner (nodes.last_error), never shown to other users.
 */
import type { CoreApp } from '../app.ts'
import { penalizeNode } from '../ledger/settlement.ts'
import { withSingleWrite } from '../records/unit-of-work.ts'
import type { MeteredAnswer } from '../metering/answer-meter.ts'
import type { Metering } from '../metering/metering.ts'
import { requireCollection } from '../collections/registry.ts'
import { server as superuser } from '../records/caller.ts'
import { formatDate, nowDate } from '../../tools/dates.ts'

export interface NodeHealthOptions {
  /** Failures in a row that bench a node. */
  failuresToBench: number
  /** First cool-down; each further bench doubles it, up to `maxBenchMs`. */
  benchMs: number
  maxBenchMs: number
}

export const defaultNodeHealthOptions: NodeHealthOptions = {
  failuresToBench: 3,
  benchMs: 5 * 60_000,
  maxBenchMs: 6 * 60 * 60_000,
}

export type FailureKind = 'failed' | 'rejected' | 'stalled' | 'dropped'

/** Answers shorter than this say more about latency than speed: not measured. */
const MIN_MEASURED_TOKENS = 8
/** Weight of the newest job in the moving average. */
const SPEED_WEIGHT = 0.3

interface State {
  failuresInRow: number
  benches: number
}

export class NodeHealth {
  private states = new Map<string, State>()

  constructor(
    private core: CoreApp,
    private metering: Metering,
    private options: NodeHealthOptions = defaultNodeHealthOptions,
  ) {}

  /** A job on the node failed; `nodeText` is what the node said (kept for its owner only). */
  async failure(nodeId: string, kind: FailureKind, nodeText = ''): Promise<void> {
    const state = this.state(nodeId)
    state.failuresInRow++
    await withSingleWrite(this.core, (uow) => penalizeNode(uow, nodeId))
    const values: Record<string, unknown> = {}
    if (nodeText) {
      values.last_error = `${describe(kind)}: ${nodeText}`.slice(0, 1000)
      values.last_error_at = nowDate()
    }
    if (state.failuresInRow >= this.options.failuresToBench) {
      const ms = Math.min(this.options.maxBenchMs, this.options.benchMs * 2 ** state.benches)
      state.benches++
      state.failuresInRow = 0
      values.benched_until = formatDate(new Date(Date.now() + ms))
    }
    if (Object.keys(values).length) await this.updateNode(nodeId, values)
  }

  /** Reputation lost for `jobs` jobs, with no failure counted toward a bench (node lost its socket
   * with several jobs: one failure for the loss, the reputation of each job). */
  async penalize(nodeId: string, jobs: number): Promise<void> {
    await withSingleWrite(this.core, (uow) => penalizeNode(uow, nodeId, jobs))
  }

  /**
   * A job finished: the run of failures ends, its speed joins the node model's average, and a
   * reference node's answer (its own count against its text) calibrates metering without a
   * tokenizer.
   */
  async success(
    nodeId: string,
    modelId: string,
    answer: MeteredAnswer,
    claimed: number,
    elapsedMs: number,
  ): Promise<void> {
    this.state(nodeId).failuresInRow = 0
    const tokens = answer.tokensOutput
    const db = this.core.database.db
    const trusted = await db
      .selectFrom('nodes')
      .select('trusted')
      .where('id', '=', nodeId)
      .executeTakeFirst()
    if (Number(trusted?.trusted) === 1 && answer.text)
      await this.metering.calibrate(modelId, answer.text, answer.nodeIds?.length || claimed)
    if (tokens < MIN_MEASURED_TOKENS || elapsedMs <= 0) return
    const speed = tokens / (elapsedMs / 1000)
    const row = await db
      .selectFrom('node_models')
      .select(['id', 'measured_tokens_per_second'])
      .where('node', '=', nodeId)
      .where('model', '=', modelId)
      .executeTakeFirst()
    if (!row) return
    const previous = Number(row.measured_tokens_per_second)
    const next = previous > 0 ? previous + SPEED_WEIGHT * (speed - previous) : speed
    await this.core.records
      .update(superuser, requireCollection('node_models'), String(row.id), {
        measured_tokens_per_second: Math.round(next * 10) / 10,
      })
      .catch(() => {}) // removed by its owner meanwhile
  }

  private state(nodeId: string): State {
    let s = this.states.get(nodeId)
    if (!s) this.states.set(nodeId, (s = { failuresInRow: 0, benches: 0 }))
    return s
  }

  private async updateNode(nodeId: string, values: Record<string, unknown>) {
    await this.core.records
      .update(superuser, requireCollection('nodes'), nodeId, values)
      .catch(() => {}) // deleted meanwhile: nothing to record
  }
}

function describe(kind: FailureKind): string {
  return {
    failed: 'A job failed',
    rejected: 'An offer was turned down',
    stalled: 'A job stalled',
    dropped: 'A job was dropped',
  }[kind]
}
