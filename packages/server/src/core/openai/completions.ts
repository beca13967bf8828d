/**
 * @module The OpenAI-compatible API's work (issue 10): the model list, and chat completions run
 * through the chat pipeline itself (the same hold, request row, scheduling and settlement as a
 * chat message, so billing cannot differ), followed through the request's record events.
 */
import type { Sampling } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import { lockKeyRoom, RevokedKeyError, type ApiKeyIdentity } from '../api-keys/api-keys.ts'
import { estimateMessages } from '../chat/build-prompt.ts'
import { CONTEXT_LENGTH, MIN_OUTPUT_TOKENS, type ChatService } from '../chat/chat-service.ts'
import { fromUnits } from '../ledger/credits.ts'
import { InsufficientBalanceError } from '../ledger/reservation.ts'
import type { Row } from '../records/serialize.ts'
import type { Scheduler } from '../scheduler/scheduler.ts'
import { newRecordId } from '../../tools/ids.ts'
import { promptOf, type CompletionRequest } from './completion-request.ts'
import {
  insufficientCredits,
  invalidApiKey,
  modelNotFound,
  noNodeServing,
  OpenAiError,
} from './openai-error.ts'
import { EventQueue, RequestWatch } from './request-watch.ts'

export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
}

export type FinishReason = 'stop' | 'length'

export type CompletionEvent =
  | { type: 'text'; text: string }
  | { type: 'done'; text: string; finishReason: FinishReason; usage: Usage }
  | { type: 'error'; error: OpenAiError }

export interface Completion {
  requestId: string
  /** Unix seconds. */
  created: number
  model: string
  events: AsyncIterable<CompletionEvent>
}

export interface ModelList {
  object: 'list'
  data: Array<{ id: string; object: 'model'; created: number; owned_by: string }>
}

/** A streamed answer's node went away after part of it reached the client: it cannot be taken back. */
export const NODE_LOST_MESSAGE =
  'The node writing this answer went away after part of it was sent. Nothing was charged; please send the request again.'

export class OpenAiApi {
  readonly watch: RequestWatch

  constructor(
    private core: CoreApp,
    private chat: ChatService,
    private scheduler: Scheduler,
  ) {
    this.watch = new RequestWatch(core.events, core.bus)
  }

  close(): void {
    this.watch.close()
  }

  /** Active catalogue models that at least one online node serves; the others are left out. */
  async listModels(): Promise<ModelList> {
    const rows = await this.core.database.db
      .selectFrom('available_models as a')
      .innerJoin('models as m', 'm.id', 'a.id')
      .select(['m.name as name', 'm.created as created'])
      .where('a.node_count', '>', 0)
      .orderBy('a.sort_order')
      .orderBy('m.name')
      .execute()
    return {
      object: 'list',
      data: rows.map((r) => ({
        id: String(r.name),
        object: 'model',
        created: unixSeconds(String(r.created)),
        owned_by: 'meshwork',
      })),
    }
  }

  async start(key: ApiKeyIdentity, req: CompletionRequest): Promise<Completion> {
    // A request that can never fit is the client's error, whatever is being served.
    const minOutput = Math.min(MIN_OUTPUT_TOKENS, req.maxTokens ?? MIN_OUTPUT_TOKENS)
    if (estimateMessages(req.messages) + minOutput > CONTEXT_LENGTH) {
      throw new OpenAiError(
        400,
        `The messages are too long: this network's context length is ${CONTEXT_LENGTH} tokens (about 4 characters each), answer included.`,
        'invalid_request_error',
        'context_length_exceeded',
        'messages',
      )
    }
    const db = this.core.database.db
    const model = await db
      .selectFrom('models')
      .select(['id', 'credit_multiplier', 'is_active'])
      .where('name', '=', req.model)
      .executeTakeFirst()
    if (!model || !Number(model.is_active)) throw modelNotFound(req.model)
    const live = await db
      .selectFrom('available_models')
      .select('node_count')
      .where('id', '=', model.id)
      .executeTakeFirst()
    if (!live || Number(live.node_count) < 1) throw noNodeServing(req.model)
    const sampling = await this.sampling(req)
    const requestId = newRecordId()
    const queue = new EventQueue<CompletionEvent>()
    let outputCap = 0
    let sent = ''
    const end = (event: CompletionEvent) => {
      queue.push(event)
      queue.end()
      unwatch()
    }
    const unwatch = this.watch.watch(requestId, (row: Row) => {
      const status = String(row.status)
      const response = String(row.response ?? '')
      if (status === 'pending' || status === 'processing') {
        if (!req.stream) return
        if (!response.startsWith(sent)) {
          // Another node took the job over: its answer would not continue the text sent.
          if (sent) this.scheduler.abandon(requestId, NODE_LOST_MESSAGE)
          return
        }
        if (response.length > sent.length) {
          queue.push({ type: 'text', text: response.slice(sent.length) })
          sent = response
        }
        return
      }
      if (status === 'completed' || status === 'cancelled') {
        // Cancelled: stopped by its owner (`POST /api/requests/cancel`), or by this client going
        // away; the text produced so far and its usage (what was billed) end the answer.
        if (req.stream && response.length > sent.length && response.startsWith(sent)) {
          queue.push({ type: 'text', text: response.slice(sent.length) })
        }
        const usage = usageOf(row)
        end({
          type: 'done',
          text: response,
          usage,
          finishReason:
            status === 'completed' && usage.completion_tokens >= outputCap ? 'length' : 'stop',
        })
      } else if (status === 'failed') {
        const message = String(row.error_message || 'The request failed.')
        end({
          type: 'error',
          error: new OpenAiError(503, message, 'server_error', 'request_failed'),
        })
      }
    })
    try {
      await this.chat.startApiRequest({
        user: key.user,
        modelId: String(model.id),
        multiplierUnits: Number(model.credit_multiplier ?? 0),
        prompt: promptOf(req.messages),
        messages: req.messages,
        sampling,
        maxOutput: req.maxTokens ?? Infinity,
        apiKey: key.id,
        requestId,
        holdCap: async (trx, smallest) => {
          const room = await lockKeyRoom(trx, key.id)
          if (room < smallest) {
            throw insufficientCredits(
              `This API key's spending limit is reached: ${formatCredits(fromUnits(room))} of its ${formatCredits(key.spendLimit)} credits left, at least ${formatCredits(fromUnits(smallest))} needed.`,
            )
          }
          return room
        },
        onReserved: (r) => (outputCap = r.outputCap),
      })
    } catch (err) {
      unwatch()
      if (err instanceof RevokedKeyError) throw invalidApiKey()
      if (err instanceof InsufficientBalanceError) throw insufficientCredits(err.message)
      throw err
    }
    return { requestId, created: Math.floor(Date.now() / 1000), model: req.model, events: queue }
  }

  /**
   * Stops a request at once (its client went away): the node stops, the request ends cancelled
   * and pays for what was produced up to now, nothing stays held.
   */
  stop(requestId: string): Promise<void> {
    return this.chat.stop(requestId)
  }

  private async sampling(req: CompletionRequest): Promise<Omit<Sampling, 'max_tokens'>> {
    const base = await this.chat.sampling(req.temperature)
    return {
      ...base,
      top_p: req.topP ?? base.top_p,
      frequency_penalty: req.frequencyPenalty ?? base.frequency_penalty,
      presence_penalty: req.presencePenalty ?? base.presence_penalty,
      ...(req.stop.length ? { stop: req.stop } : {}),
      ...(req.seed !== null ? { seed: req.seed } : {}),
    }
  }
}

/** What was billed: the settled row's token counts (cost = their sum x the multiplier). */
function usageOf(row: Row): Usage {
  const prompt = Number(row.tokens_input ?? 0)
  const completion = Number(row.tokens_output ?? 0)
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

function unixSeconds(date: string): number {
  const ms = Date.parse(date.replace(' ', 'T'))
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : 0
}

const formatCredits = (n: number) => String(Math.round(n * 100) / 100)
