/**
 * @module Chat send and retry (product spec section 5): validates, builds the prompt, holds the
 * credits and creates the pending request in one transaction, then hands it to the scheduler.
 */
import type { Sampling } from '@meshwork/protocol'
import { z } from 'zod'
import { ApiError, unauthorized } from '../../tools/api-error.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import type { CoreApp } from '../app.ts'
import type { Caller } from '../records/caller.ts'
import { holdCredits, InsufficientBalanceError } from '../ledger/reservation.ts'
import { emitBalance, emitById } from '../scheduler/emit-stored.ts'
import type { Scheduler } from '../scheduler/scheduler.ts'
import { buildPrompt, type Turn } from './build-prompt.ts'

/** Spec section 9: a request's context_length. */
export const CONTEXT_LENGTH = 8000
export const MAX_OUTPUT_TOKENS = 256
/** A send that cannot pay for this many output tokens is refused before any node works. */
export const MIN_OUTPUT_TOKENS = 16

export interface SendAnswer {
  request_id: string
  status: 'queued'
  position: number
}

/** An error whose message is sent exactly as written (the spec's strings have no full stop). */
export function exactError(status: number, message: string): ApiError {
  const err = new ApiError(status, message)
  err.message = message
  return err
}

export const unavailableMessage = (name: string) =>
  `${name} is currently unavailable. No nodes are online for this model. Please select a different model or try again later.`

const sendSchema = z.object({
  conversation_id: z.string().optional().default(''),
  model_id: z.string().optional().default(''),
  prompt: z.string().optional().default(''),
  temperature: z.number().min(0).max(2).nullable().optional(),
})

export class ChatService {
  constructor(
    private core: CoreApp,
    private scheduler: Scheduler,
    private maxOutputTokens = MAX_OUTPUT_TOKENS,
  ) {}

  async send(caller: Caller, body: unknown): Promise<SendAnswer> {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    const parsed = sendSchema.safeParse(body ?? {})
    if (!parsed.success) throw new ApiError(400, 'Temperature must be a number between 0 and 2.')
    const input = parsed.data
    if (!input.conversation_id) throw exactError(400, 'Conversation ID is required')
    if (!input.model_id) throw exactError(400, 'Model ID is required')
    if (!input.prompt.trim()) throw exactError(400, 'Prompt is required')
    const db = this.core.database.db
    const conversation = await db
      .selectFrom('conversations')
      .select(['id', 'user'])
      .where('id', '=', input.conversation_id)
      .executeTakeFirst()
    if (!conversation || conversation.user !== user)
      throw exactError(403, 'Conversation does not belong to current user')
    const multiplier = await this.availableModel(input.model_id)
    const history = (await db
      .selectFrom('requests')
      .select(['prompt', 'response'])
      .where('conversation', '=', conversation.id)
      .where('status', '=', 'completed')
      .orderBy('created')
      .execute()) as Turn[]
    const sampling = await this.sampling(input.temperature ?? null)
    return this.start({
      user,
      conversation: String(conversation.id),
      modelId: input.model_id,
      multiplier,
      prompt: input.prompt,
      history,
      sampling,
    })
  }

  /** Re-runs a failed request of the caller under the same id. */
  async retry(
    caller: Caller,
    body: unknown,
  ): Promise<{ status: 'success'; message: string; request_id: string }> {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    const requestId =
      typeof (body as { request_id?: unknown })?.request_id === 'string'
        ? (body as { request_id: string }).request_id
        : ''
    if (!requestId) throw exactError(400, 'Request ID is required')
    const db = this.core.database.db
    const request = await db
      .selectFrom('requests')
      .selectAll()
      .where('id', '=', requestId)
      .executeTakeFirst()
    if (!request || request.user !== user)
      throw new ApiError(404, "The requested resource wasn't found.")
    if (request.status !== 'failed') throw new ApiError(400, 'Only failed requests can be retried.')
    const multiplier = await this.availableModel(String(request.model))
    const history = (await db
      .selectFrom('requests')
      .select(['prompt', 'response'])
      .where('conversation', '=', request.conversation)
      .where('status', '=', 'completed')
      .where('created', '<', request.created)
      .orderBy('created')
      .execute()) as Turn[]
    const sampling = await this.sampling(Number(request.temperature))
    await this.start({
      user,
      conversation: String(request.conversation),
      modelId: String(request.model),
      multiplier,
      prompt: String(request.prompt),
      history,
      sampling,
      retryOf: requestId,
    })
    return { status: 'success', message: 'Request queued for retry', request_id: requestId }
  }

  private async start(p: {
    user: string
    conversation: string
    modelId: string
    multiplier: number
    prompt: string
    history: Turn[]
    sampling: Omit<Sampling, 'max_tokens'>
    retryOf?: string
  }): Promise<SendAnswer> {
    const built = buildPrompt(p.history, p.prompt, CONTEXT_LENGTH, this.maxOutputTokens)
    const requestId = p.retryOf ?? newRecordId()
    const now = nowDate()
    const reservation = await this.core.database.db
      .transaction()
      .execute(async (trx) => {
        const r = await holdCredits(trx, {
          user: p.user,
          estimatedInput: built.estimatedInput,
          maxOutput: this.maxOutputTokens,
          minOutput: MIN_OUTPUT_TOKENS,
          multiplier: p.multiplier,
        })
        const values = {
          status: 'pending',
          response: '',
          error_message: '',
          can_retry: 0,
          is_partial: 0,
          tokens_input: 0,
          tokens_output: 0,
          processing_time_ms: 0,
          node: '',
          reserved: r.amount,
          updated: now,
        }
        if (p.retryOf) {
          const res = await trx
            .updateTable('requests')
            .set(values)
            .where('id', '=', p.retryOf)
            .where('status', '=', 'failed')
            .executeTakeFirst()
          if (Number(res.numUpdatedRows) !== 1)
            throw new ApiError(400, 'Only failed requests can be retried.')
        } else {
          const s = p.sampling
          await trx
            .insertInto('requests')
            .values({
              ...values,
              id: requestId,
              user: p.user,
              conversation: p.conversation,
              prompt: p.prompt,
              model: p.modelId,
              context_length: s.context_length,
              temperature: s.temperature,
              top_p: s.top_p,
              top_k: s.top_k,
              repeat_penalty: s.repeat_penalty,
              frequency_penalty: s.frequency_penalty,
              presence_penalty: s.presence_penalty,
              created: now,
            })
            .execute()
        }
        return r
      })
      .catch((err) => {
        if (err instanceof InsufficientBalanceError) throw new ApiError(400, err.message)
        throw err
      })
    await emitById(this.core, 'requests', requestId, p.retryOf ? 'update' : 'create')
    await emitBalance(this.core, p.user)
    const position = this.scheduler.enqueue({
      requestId,
      user: p.user,
      modelId: p.modelId,
      estimatedInput: built.estimatedInput,
      maxTokens: reservation.outputCap,
      prompt: { messages: built.messages },
      sampling: { ...p.sampling, max_tokens: reservation.outputCap },
    })
    return { request_id: requestId, status: 'queued', position }
  }

  /** The model's credit multiplier, or the spec's "unavailable" error when no node serves it. */
  private async availableModel(modelId: string): Promise<number> {
    const db = this.core.database.db
    const model = await db
      .selectFrom('models')
      .select(['name', 'display_name', 'credit_multiplier', 'is_active'])
      .where('id', '=', modelId)
      .executeTakeFirst()
    if (!model) throw new ApiError(400, unavailableMessage(modelId))
    const live = await db
      .selectFrom('available_models')
      .select('node_count')
      .where('id', '=', modelId)
      .executeTakeFirst()
    if (!Number(model.is_active) || !live || Number(live.node_count) < 1) {
      throw exactError(400, unavailableMessage(String(model.display_name || model.name)))
    }
    return Number(model.credit_multiplier ?? 1)
  }

  private async sampling(temperature: number | null): Promise<Omit<Sampling, 'max_tokens'>> {
    const config = await this.core.database.db
      .selectFrom('config')
      .selectAll()
      .limit(1)
      .executeTakeFirst()
    const num = (key: string, fallback: number) =>
      config && Number.isFinite(Number(config[key])) ? Number(config[key]) : fallback
    return {
      temperature:
        temperature !== null && Number.isFinite(temperature)
          ? temperature
          : num('default_temperature', 0.7),
      top_p: num('default_top_p', 0.9),
      top_k: Math.round(num('default_top_k', 40)),
      repeat_penalty: num('default_repeat_penalty', 1.1),
      frequency_penalty: num('default_frequency_penalty', 0),
      presence_penalty: num('default_presence_penalty', 0),
      context_length: CONTEXT_LENGTH,
    }
  }
}
