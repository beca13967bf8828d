/**
 * @module A canary's request row. Canaries are requests like any other to a node and to anyone
 * watching the Network screen: the same record (status, model, sampling, timing, node), the same
 * events, the same `node_jobs`. They belong to no user, hold nothing and pay nobody.
 */
import { sql } from 'kysely'
import type { Sampling } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import type { MeteredAnswer } from '../metering/answer-meter.ts'
import { withUnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'

export async function createCanaryRequest(
  core: CoreApp,
  modelId: string,
  prompt: string,
  sampling: Sampling,
): Promise<string> {
  const id = newRecordId()
  const now = nowDate()
  await withUnitOfWork(core, (uow) =>
    uow.insert('requests', {
      id,
      user: '',
      conversation: '',
      prompt,
      model: modelId,
      status: 'pending',
      context_length: sampling.context_length,
      temperature: sampling.temperature,
      top_p: sampling.top_p,
      top_k: sampling.top_k,
      repeat_penalty: sampling.repeat_penalty,
      frequency_penalty: sampling.frequency_penalty,
      presence_penalty: sampling.presence_penalty,
      response: '',
      error_message: '',
      reserved: 0,
      lease_owner: core.processId,
      created: now,
      updated: now,
    }),
  )
  return id
}

/** The canary's answer is stored like a completed request's; no ledger row is written. */
export async function completeCanaryRequest(
  core: CoreApp,
  requestId: string,
  nodeId: string,
  answer: MeteredAnswer,
  tokensInput: number,
  processingTimeMs: number,
): Promise<void> {
  const now = nowDate()
  await withUnitOfWork(core, async (uow) => {
    const marked = await uow.update('requests', (q) =>
      q
        .set({
          status: 'completed',
          response: answer.text,
          is_partial: 0,
          tokens_input: tokensInput,
          tokens_output: answer.tokensOutput,
          processing_time_ms: processingTimeMs,
          node: nodeId,
          updated: now,
        })
        .where('id', '=', requestId)
        .where('status', 'in', ['pending', 'processing']),
    )
    if (marked.length !== 1) return
    await uow.update('nodes', (q) =>
      q
        .set({ total_requests: sql`COALESCE(total_requests, 0) + 1`, updated: now })
        .where('id', '=', nodeId),
    )
  })
}
