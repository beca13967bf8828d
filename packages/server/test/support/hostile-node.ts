/**
 * @module Hostile nodes for tests: a FakeNode (real WebSocket, linked through the real device-link
 * flow) whose jobs follow a behaviour the test chooses (empty chunks for ever, a trickle, a stream
 * that stops to wait), with helpers to speak each job frame and to see a job cancelled.
 */
import type PocketBase from 'pocketbase'
import type { JobOfferFrame } from '@meshwork/protocol'
import { signUp, type TestServer } from '../harness.ts'
import { FakeNode, linkedNode, waitUntil } from './network.ts'

export type Behaviour = (job: JobOfferFrame, node: HostileNode) => Promise<void>

export class HostileNode extends FakeNode {
  /** Null: the honest FakeNode script. */
  behaviour: Behaviour | null = null

  protected override async run(job: JobOfferFrame) {
    if (!this.behaviour) return super.run(job)
    this.jobs.push(job)
    await this.behaviour(job, this)
  }

  accept(job: JobOfferFrame) {
    this.send({ type: 'job_accepted', job_id: job.job_id })
  }

  chunk(job: JobOfferFrame, text: string) {
    this.send({ type: 'job_chunk', job_id: job.job_id, text })
  }

  done(job: JobOfferFrame, tokensOutput: number) {
    this.send({
      type: 'job_done',
      job_id: job.job_id,
      tokens_input: 0,
      tokens_output: tokensOutput,
      processing_time_ms: 5,
    })
  }

  /** Whether the coordinator told this node to stop `job`. */
  cancelled(job: JobOfferFrame): boolean {
    return this.frames.some((f) => f.type === 'job_cancel' && f.job_id === job.job_id)
  }

  /** Resolves with the first job offered to this node. */
  firstJob(timeoutMs = 10_000): Promise<JobOfferFrame> {
    return waitUntil(() => this.jobs[0], timeoutMs, 'a job offer')
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Accepts, then sends empty chunks every `everyMs` until the job is cancelled (or `forMs` passes). */
export const emptyChunks =
  (everyMs = 50, forMs = 60_000): Behaviour =>
  async (job, node) => {
    node.accept(job)
    for (const end = Date.now() + forMs; Date.now() < end && !node.cancelled(job);) {
      node.chunk(job, '')
      await sleep(everyMs)
    }
  }

/** Accepts, then one character every `everyMs`: never silent long enough to stall, never done. */
export const trickle =
  (everyMs: number, forMs = 60_000): Behaviour =>
  async (job, node) => {
    node.accept(job)
    for (const end = Date.now() + forMs; Date.now() < end && !node.cancelled(job);) {
      node.chunk(job, 'a')
      await sleep(everyMs)
    }
  }

/** Accepts, streams `text` in one chunk, then keeps the job open (heartbeats go on) until cancelled. */
export const streamThenWait =
  (text: string): Behaviour =>
  async (job, node) => {
    node.accept(job)
    node.chunk(job, text)
  }

/**
 * A hostile node linked by `owner` (a new account when absent) and serving `modelId`. Verified
 * unless `probation` (the worst case for money: a node that has passed its canaries is paid at
 * once; see verifyNode).
 */
export async function hostileNode(
  server: TestServer,
  modelId: string,
  owner?: PocketBase,
  { probation = false } = {},
) {
  owner ??= await signUp(server, 'hostile')
  const make = (nodeId: string, credential: string) => new HostileNode(server, nodeId, credential)
  return linkedNode(server, modelId, owner, make, { probation })
}
