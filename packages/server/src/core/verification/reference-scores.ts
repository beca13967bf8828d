/**
 * @module Asking reference nodes to score an answer (`score_request` / `score_result`). Only
 * nodes the operator trusts are asked, only their answers are taken, and only from the node that
 * was asked. Reference nodes must be connected to this coordinator process.
 */
import type { ChatMessage, Sampling, ScoredPosition } from '@meshwork/protocol'
import { newRecordId } from '../../tools/ids.ts'
import type { NodeRegistry, ScoreFrame, ScoreListener } from '../nodes/node-registry.ts'

export interface ScoreAsk {
  modelId: string
  messages: ChatMessage[]
  sampling: Sampling
  text: string
  tokens: number[] | null
}

export interface ReferenceScore {
  tokens: number[]
  positions: ScoredPosition[]
  idsMatch: boolean | null
}

export class ReferenceUnavailableError extends Error {
  override name = 'ReferenceUnavailableError'
}

interface Pending {
  nodeId: string
  resolve: (score: ReferenceScore) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
}

export class ReferenceScores implements ScoreListener {
  private pending = new Map<string, Pending>()

  constructor(
    private registry: NodeRegistry,
    private timeoutMs = 60_000,
  ) {
    registry.scores = this
  }

  /** Scores on `referenceNodeId`; rejects when it cannot (gone, failed, too slow). */
  score(referenceNodeId: string, ask: ScoreAsk): Promise<ReferenceScore> {
    const session = this.registry.local(referenceNodeId)
    if (!session)
      return Promise.reject(new ReferenceUnavailableError('Reference node not connected'))
    const scoreId = newRecordId()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(scoreId)
        reject(new ReferenceUnavailableError('The reference node did not answer'))
      }, this.timeoutMs)
      timer.unref()
      this.pending.set(scoreId, { nodeId: referenceNodeId, resolve, reject, timer })
      const sent = session.send({
        type: 'score_request',
        score_id: scoreId,
        model_id: ask.modelId,
        prompt: { messages: ask.messages },
        sampling: ask.sampling,
        text: ask.text,
        ...(ask.tokens ? { tokens: ask.tokens } : {}),
      })
      if (!sent) this.settle(scoreId, new ReferenceUnavailableError('Reference node not connected'))
    })
  }

  onScoreFrame(nodeId: string, frame: ScoreFrame): void {
    const pending = this.pending.get(frame.score_id)
    if (!pending || pending.nodeId !== nodeId) return // not asked of this node
    if (frame.type === 'score_failed')
      return this.settle(frame.score_id, new ReferenceUnavailableError(frame.error))
    if (frame.positions.length !== frame.tokens.length)
      return this.settle(frame.score_id, new ReferenceUnavailableError('Malformed score'))
    this.settle(frame.score_id, {
      tokens: frame.tokens,
      positions: frame.positions,
      idsMatch: frame.ids_match,
    })
  }

  close(): void {
    for (const id of [...this.pending.keys()])
      this.settle(id, new ReferenceUnavailableError('Coordinator closing'))
  }

  private settle(scoreId: string, outcome: ReferenceScore | Error) {
    const pending = this.pending.get(scoreId)
    if (!pending) return
    this.pending.delete(scoreId)
    clearTimeout(pending.timer)
    if (outcome instanceof Error) pending.reject(outcome)
    else pending.resolve(outcome)
  }
}
