/**
 * @module Chat send and retry (product spec section 5): validates, builds the prompt, holds the
 * credits and creates the pending request in one transaction, then hands it to the scheduler.
 */
import {
  requestStatusSchema,
  type CancelRequestAnswer,
  type CancelRequestBody,
  type ChatMessage,
  type ChatQuoteBody,
  type ChatSendBody,
  type Sampling,
} from '@meshwork/protocol'
import { ApiError, unauthorized } from '../../tools/api-error.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import type { CoreApp } from '../app.ts'
import type { Caller } from '../records/caller.ts'
import type { Row } from '../records/serialize.ts'
import { holdCredits, InsufficientBalanceError, type Reservation } from '../ledger/reservation.ts'
import { fromUnits, requestCostUnits } from '../ledger/credits.ts'
import type { Db } from '../../db/database.ts'
import { countInput } from '../metering/input-count.ts'
import type { Metering } from '../metering/metering.ts'
import { withUnitOfWork } from '../records/unit-of-work.ts'
import type { Scheduler } from '../scheduler/scheduler.ts'
import type { WorkItem } from '../scheduler/work.ts'
import { buildPrompt, type Turn } from './build-prompt.ts'
import { quoteMessage, type QuoteAnswer } from './chat-quote.ts'
import { conversationHistory, exactError, ownConversation, ownRequest } from './chat-records.ts'
import { touchConversation } from './conversation-activity.ts'
import { earlierSend, keyInUse } from './repeated-send.ts'
import { isUniqueViolation } from '../../db/unique-violation.ts'
import { cachedConfig } from './sampling-defaults.ts'
import { stopRequest } from './stop-request.ts'
import { resumeRequest } from './resume-request.ts'
import { CONTEXT_LENGTH, MAX_OUTPUT_TOKENS, MIN_OUTPUT_TOKENS } from './chat-limits.ts'

export { CONTEXT_LENGTH, MAX_OUTPUT_TOKENS, MIN_OUTPUT_TOKENS }

export interface SendAnswer {
  request_id: string
  status: 'queued'
  position: number
  /** An earlier send of the same message had stored the request (repeated-send.ts). */
  repeated?: true
}

export { exactError }

export const unavailableMessage = (name: string) =>
  `${name} is currently unavailable. No nodes are online for this model. Please select a different model or try again later.`

/** What a request made through an API key brings (see `startApiRequest`). */
export interface ApiRequestStart {
  user: string
  modelId: string
  /** The model's multiplier in credit units (thousandths). */
  multiplierUnits: number
  /** Stored as the request's prompt (the last user message). */
  prompt: string
  messages: ChatMessage[]
  sampling: Omit<Sampling, 'max_tokens'>
  /** The client's max_tokens (the server's own cap still applies). */
  maxOutput: number
  apiKey: string
  requestId: string
  /** Inside the send's transaction: the most that may be held, in credit units (a key's spending
   * limit), given the smallest useful hold in units. */
  holdCap?: (trx: Db, smallestHold: number) => Promise<number>
  onReserved?: (reservation: Reservation) => void
}

/**
 * A send, regenerate or retry refused for want of credits (400). It is refused after its prompt
 * was counted (with a tokenizer, the costly part), so unlike a refused body it keeps its count in
 * the send limit: otherwise an account that can never pay had prompts counted without limit.
 */
export class InsufficientCreditsError extends ApiError {
  constructor(message: string) {
    super(400, message)
  }
}

export const ONLY_LAST_MESSAGE = 'Only the last answer can be regenerated.'
/** A request in one of these may be regenerated. */
const ENDED_STATUSES = ['completed', 'failed', 'cancelled'] as const
const isEnded = (status: string) => (ENDED_STATUSES as readonly string[]).includes(status)
export const STILL_WRITING = 'This answer is still being written.'

export class ChatService {
  private config = cachedConfig(() => this.core.database.db)

  constructor(
    private core: CoreApp,
    private scheduler: Scheduler,
    private metering: Metering,
    private maxOutputTokens = MAX_OUTPUT_TOKENS,
  ) {}

  /** Bodies are validated at the HTTP edge (network-routes.ts), with protocol's schemas. */
  async send(caller: Caller, input: ChatSendBody): Promise<SendAnswer> {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    const db = this.core.database.db
    const conversation = await ownConversation(db, user, input.conversation_id)
    const earlier = await earlierSend(db, user, input)
    if (earlier) return earlier
    const multiplierUnits = await this.availableModel(input.model_id)
    const history = await conversationHistory(
      db,
      String(conversation.id),
      undefined,
      CONTEXT_LENGTH,
    )
    // The body's temperature wins; otherwise the conversation's own (spec section 1).
    const sampling = await this.sampling(input.temperature ?? Number(conversation.temperature))
    return this.start({
      user,
      conversation: String(conversation.id),
      modelId: input.model_id,
      multiplierUnits,
      prompt: input.prompt,
      history,
      sampling,
      touch: true,
      idempotencyKey: input.idempotency_key,
    }).catch(async (err: unknown) => {
      // The same message sent twice at once: the second insert found the first's row.
      if (!input.idempotency_key || !isUniqueViolation(err)) throw err
      const first = await earlierSend(db, user, input)
      if (!first) throw keyInUse()
      return first
    })
  }

  /**
   * Answers the conversation's last message again: a new request with the same prompt, the
   * conversation's current temperature and the same earlier turns, charged like any send. The
   * answer it replaces stays stored (it was paid for) with `replaced_by` set, and is left out of
   * history and of later prompts.
   */
  async regenerate(caller: Caller, input: CancelRequestBody): Promise<SendAnswer> {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    const db = this.core.database.db
    const request = await ownRequest(db, user, input.request_id)
    if (!isEnded(String(request.status))) throw new ApiError(400, STILL_WRITING)
    if (request.replaced_by) throw new ApiError(400, ONLY_LAST_MESSAGE)
    const later = await db
      .selectFrom('requests')
      .select('id')
      .where('conversation', '=', request.conversation)
      .where('replaced_by', '=', '')
      .where('id', '!=', request.id)
      .where('created', '>=', request.created)
      .limit(1)
      .executeTakeFirst()
    if (later) throw new ApiError(400, ONLY_LAST_MESSAGE)
    const conversation = await ownConversation(db, user, String(request.conversation))
    const multiplierUnits = await this.availableModel(String(request.model))
    const history = await conversationHistory(
      db,
      String(conversation.id),
      String(request.created),
      CONTEXT_LENGTH,
    )
    const sampling = await this.sampling(Number(conversation.temperature))
    return this.start({
      user,
      conversation: String(conversation.id),
      modelId: String(request.model),
      multiplierUnits,
      prompt: String(request.prompt),
      history,
      sampling,
      touch: true,
      replaces: String(request.id),
    })
  }

  /** The most a message can cost before it is sent: the hold `send` would take right now. */
  async quote(caller: Caller, input: ChatQuoteBody): Promise<QuoteAnswer> {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    const meterRule = await this.metering.rule(input.model_id)
    return quoteMessage(this.core.database.db, user, input, {
      contextLength: CONTEXT_LENGTH,
      maxOutput: this.maxOutputTokens,
      minOutput: MIN_OUTPUT_TOKENS,
      count: (contents) => countInput(contents, meterRule),
    })
  }

  /** Re-runs a failed request of the caller under the same id. */
  async retry(
    caller: Caller,
    input: CancelRequestBody,
  ): Promise<{ status: 'success'; message: string; request_id: string }> {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    const db = this.core.database.db
    const request = await ownRequest(db, user, input.request_id)
    const requestId = String(request.id)
    // A request made through the API is retried by its program, which has the whole prompt.
    if (request.status !== 'failed' || request.api_key || request.replaced_by)
      throw new ApiError(400, 'Only failed requests can be retried.')
    const multiplierUnits = await this.availableModel(String(request.model))
    const history = await conversationHistory(
      db,
      String(request.conversation),
      String(request.created),
      CONTEXT_LENGTH,
    )
    const sampling = await this.sampling(Number(request.temperature))
    await this.start({
      user,
      conversation: String(request.conversation),
      modelId: String(request.model),
      multiplierUnits,
      prompt: String(request.prompt),
      history,
      sampling,
      retryOf: requestId,
    })
    return { status: 'success', message: 'Request queued for retry', request_id: requestId }
  }

  /**
   * Stops the caller's request (`POST /api/requests/cancel`, issue 10): it ends `cancelled` with
   * the text produced so far, paid for as produced, its hold released. Idempotent: a request that
   * has already ended is answered as it is, unchanged. Anyone else's request is a 404.
   */
  async cancel(caller: Caller, input: CancelRequestBody): Promise<CancelRequestAnswer> {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    const db = this.core.database.db
    const request = await ownRequest(db, user, input.request_id)
    const requestId = String(request.id)
    await this.stop(requestId)
    const row = await db
      .selectFrom('requests')
      .select(['status', 'response', 'tokens_input', 'tokens_output', 'cost'])
      .where('id', '=', requestId)
      .executeTakeFirst()
    // Deleted with its conversation meanwhile: it ended (cancelled) with the deletion.
    if (!row)
      return {
        request_id: requestId,
        status: 'cancelled',
        response: '',
        tokens_input: 0,
        tokens_output: 0,
        cost: 0,
      }
    return {
      request_id: requestId,
      status: requestStatusSchema.parse(row.status),
      response: String(row.response ?? ''),
      tokens_input: Number(row.tokens_input ?? 0),
      tokens_output: Number(row.tokens_output ?? 0),
      cost: fromUnits(Number(row.cost ?? 0)),
    }
  }

  /** Ends a request as cancelled wherever it runs (stop-request.ts); resolves once it ended. */
  stop(requestId: string): Promise<void> {
    return stopRequest(this.core, this.scheduler, requestId)
  }

  /**
   * A request made through an API key (issue 10): the same hold, request row, scheduling and
   * settlement as a chat message, with the client's messages as the prompt and no conversation.
   */
  startApiRequest(p: ApiRequestStart): Promise<SendAnswer> {
    return this.start({ ...p, conversation: '', history: [] })
  }

  private async start(
    p: {
      user: string
      conversation: string
      modelId: string
      multiplierUnits: number
      prompt: string
      history: Turn[]
      sampling: Omit<Sampling, 'max_tokens'>
      retryOf?: string
      /** A new message: the conversation moves to the top (and gets its title from a first one). */
      touch?: boolean
      /** The request this one regenerates: marked replaced in the same transaction. */
      replaces?: string
      /** The client's key for this message (repeated-send.ts). */
      idempotencyKey?: string
    } & Partial<ApiRequestStart>,
  ): Promise<SendAnswer> {
    const maxOutput = Math.min(this.maxOutputTokens, p.maxOutput ?? Infinity)
    const meterRule = await this.metering.rule(p.modelId)
    // Input is counted as output is (the tokenizer, or the byte bound): a padded earlier answer
    // costs what its text really is.
    const count = (contents: string[]) => countInput(contents, meterRule)
    const built = p.messages
      ? { messages: p.messages, estimatedInput: await count(p.messages.map((m) => m.content)) }
      : await buildPrompt(p.history, p.prompt, CONTEXT_LENGTH, this.maxOutputTokens, count)
    const requestId = p.retryOf ?? p.requestId ?? newRecordId()
    const now = nowDate()
    const minOutput = Math.min(MIN_OUTPUT_TOKENS, maxOutput)
    // One unit of work: the hold, the conversation's move to the top and the request, published
    // together once they committed.
    // The request as stored: the scheduler's base for its events, so the offer needs no read.
    let stored: Row | undefined
    const reservation = await withUnitOfWork(this.core, async (uow) => {
      const trx = uow.trx
      const smallest = requestCostUnits(built.estimatedInput, minOutput, p.multiplierUnits)
      const r = await holdCredits(uow, {
        user: p.user,
        estimatedInput: built.estimatedInput,
        maxOutput,
        minOutput,
        multiplierUnits: p.multiplierUnits,
        cap: p.holdCap ? await p.holdCap(trx, smallest) : undefined,
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
        // This process owns the request until it ends (scheduler/takeover.ts).
        lease_owner: this.core.processId,
      }
      if (p.retryOf) {
        // Checked again here: a regenerate of the same answer may have replaced it since the read
        // (a replaced request run again would be charged and never shown).
        const res = await uow.update('requests', (q) =>
          q
            .set(values)
            .where('id', '=', p.retryOf!)
            .where('status', '=', 'failed')
            .where('replaced_by', '=', ''),
        )
        if (res.length !== 1) throw new ApiError(400, 'Only failed requests can be retried.')
        stored = res[0]
      } else {
        const s = p.sampling
        if (p.touch && !(await touchConversation(uow, p.conversation, p.prompt, now)))
          throw exactError(403, 'Conversation does not belong to current user')
        stored = await uow.insert('requests', {
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
          api_key: p.apiKey ?? '',
          idempotency_key: p.idempotencyKey ?? '',
          created: now,
        })
      }
      if (p.replaces) {
        const replaced = await uow.update('requests', (q) =>
          q
            .set({ replaced_by: requestId, updated: now })
            .where('id', '=', p.replaces!)
            .where('replaced_by', '=', '')
            .where('status', 'in', ENDED_STATUSES),
        )
        // Two regenerations of one answer at once: only the first may replace it; and an answer
        // a retry has put back to work since the read is not replaced under it (it would run,
        // be charged and never be shown).
        if (replaced.length !== 1) {
          const current = await trx
            .selectFrom('requests')
            .select(['status', 'replaced_by'])
            .where('id', '=', p.replaces)
            .executeTakeFirst()
          const writing = current && !current.replaced_by && !isEnded(String(current.status))
          throw new ApiError(400, writing ? STILL_WRITING : ONLY_LAST_MESSAGE)
        }
      }
      return r
    }).catch((err) => {
      // API callers answer in their own shape (402).
      if (err instanceof InsufficientBalanceError && !p.apiKey)
        throw new InsufficientCreditsError(err.message)
      throw err
    })
    p.onReserved?.(reservation)
    const position = this.scheduler.enqueue(
      {
        requestId,
        user: p.user,
        modelId: p.modelId,
        estimatedInput: built.estimatedInput,
        maxTokens: reservation.outputCap,
        multiplierUnits: p.multiplierUnits,
        reservedUnits: reservation.amount,
        prompt: { messages: built.messages },
        sampling: { ...p.sampling, max_tokens: reservation.outputCap },
        meterRule,
      },
      stored,
    )
    return { request_id: requestId, status: 'queued', position }
  }

  /**
   * What the scheduler needs to run a stored pending request again (resume-request.ts), or null
   * when it cannot be rebuilt.
   */
  resume(requestId: string): Promise<WorkItem | null> {
    return resumeRequest(this.core, this.metering, this.maxOutputTokens, requestId)
  }

  /** The model's credit multiplier in units, or the spec's "unavailable" error when no node serves it. */
  private async availableModel(modelId: string): Promise<number> {
    const db = this.core.database.db
    const model = await db
      .selectFrom('models')
      .select(['name', 'display_name', 'credit_multiplier', 'is_active'])
      .where('id', '=', modelId)
      .executeTakeFirst()
    if (!model) throw new ApiError(400, unavailableMessage(modelId))
    // The count `available_models` shows, from the scheduler's nodes in memory; when those
    // cannot be read, the view's own count (a failing database fails the send there).
    const online = await this.scheduler.onlineNodes(modelId).catch(async () => {
      const live = await db
        .selectFrom('available_models')
        .select('node_count')
        .where('id', '=', modelId)
        .executeTakeFirst()
      return Number(live?.node_count ?? 0)
    })
    if (!Number(model.is_active) || online < 1) {
      throw exactError(400, unavailableMessage(String(model.display_name || model.name)))
    }
    return Number(model.credit_multiplier ?? 0)
  }

  /** The config's sampling defaults, with the caller's temperature when it sent one. */
  async sampling(temperature: number | null): Promise<Omit<Sampling, 'max_tokens'>> {
    const config = await this.config()
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
