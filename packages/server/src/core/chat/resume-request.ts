/**
 * @module Rebuilding a stored pending request for the scheduler (taken over from a process that
 * died or drained): the same prompt and sampling, read back from its row and its conversation.
 */
import type { Sampling } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import { countInput } from '../metering/input-count.ts'
import type { Metering } from '../metering/metering.ts'
import type { WorkItem } from '../scheduler/work.ts'
import { buildPrompt } from './build-prompt.ts'
import { conversationHistory } from './chat-records.ts'
import { CONTEXT_LENGTH } from './chat-limits.ts'

/**
 * What the scheduler needs to run a stored pending request again (taken over from a process that
 * died or drained): the same prompt and sampling, held to the output its hold pays for. Null when
 * it cannot be rebuilt: API requests (the whole prompt was the client's, not stored) and canaries.
 */
export async function resumeRequest(
  core: CoreApp,
  metering: Metering,
  maxOutputTokens: number,
  requestId: string,
): Promise<WorkItem | null> {
  const db = core.database.db
  const row = await db
    .selectFrom('requests')
    .selectAll()
    .where('id', '=', requestId)
    .executeTakeFirst()
  if (!row || row.status !== 'pending' || row.api_key || !row.user || !row.conversation) return null
  const model = await db
    .selectFrom('models')
    .select('credit_multiplier')
    .where('id', '=', row.model)
    .executeTakeFirst()
  if (!model) return null
  const multiplierUnits = Number(model.credit_multiplier ?? 0)
  const meterRule = await metering.rule(String(row.model))
  const count = (contents: string[]) => countInput(contents, meterRule)
  const history = await conversationHistory(
    db,
    String(row.conversation),
    String(row.created),
    CONTEXT_LENGTH,
  )
  const built = await buildPrompt(
    history,
    String(row.prompt),
    CONTEXT_LENGTH,
    maxOutputTokens,
    count,
  )
  const reservedUnits = Number(row.reserved ?? 0)
  // The hold was (input + output cap) x multiplier: the same output cap again.
  const paidOutput =
    multiplierUnits > 0
      ? Math.floor(reservedUnits / multiplierUnits) - built.estimatedInput
      : maxOutputTokens
  const maxTokens = Math.min(maxOutputTokens, paidOutput)
  if (!(maxTokens >= 1)) return null
  const sampling: Omit<Sampling, 'max_tokens'> = {
    temperature: Number(row.temperature),
    top_p: Number(row.top_p),
    top_k: Number(row.top_k),
    repeat_penalty: Number(row.repeat_penalty),
    frequency_penalty: Number(row.frequency_penalty),
    presence_penalty: Number(row.presence_penalty),
    context_length: Number(row.context_length) || CONTEXT_LENGTH,
  }
  return {
    requestId,
    user: String(row.user),
    modelId: String(row.model),
    estimatedInput: built.estimatedInput,
    maxTokens,
    multiplierUnits,
    reservedUnits,
    prompt: { messages: built.messages },
    sampling: { ...sampling, max_tokens: maxTokens },
    meterRule,
  }
}
