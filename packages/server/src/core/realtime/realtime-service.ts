/**
 * @module Realtime across processes and under abuse. A stream (GET /api/realtime) lives on the
 * process it reached; its subscription requests (POST) may reach any process behind a balancer
 * with nothing sticky: that process finds the stream's process in the client directory and asks
 * it over the bus, and answers with its verdict. Streams per address and per user and
 * subscriptions per client are limited (429), counted across processes when scaled out.
 */
import { log } from '../../tools/log.ts'
import type { Bus } from '../../tools/bus/bus.ts'
import { ApiError } from '../../tools/api-error.ts'
import { newRecordId } from '../../tools/ids.ts'
import type { AuthService } from '../auth/auth-service.ts'
import type { Caller } from '../records/caller.ts'
import type { ClientDirectory, ClientEntry } from './client-directory.ts'
import type { RealtimeClient, RealtimeHub } from './realtime-hub.ts'

export interface RealtimeLimits {
  /** Subscriptions one stream may hold (0: no limit; PocketBase takes at most 1000 per request). */
  subscriptionsPerClient: number
  /** Streams one signed-in user may hold at once, all processes together (0: no limit). */
  connectionsPerUser: number
  /** Streams one client address may hold at once, all processes together (0: no limit). */
  connectionsPerAddress: number
}

export const defaultRealtimeLimits: RealtimeLimits = {
  subscriptionsPerClient: 200,
  connectionsPerUser: 20,
  connectionsPerAddress: 100,
}

export interface SubscribeRequest {
  clientId: string
  /** The request's Authorization header, resolved by the process holding the stream. */
  authorization: string
  address: string
  keys: string[]
}

type Message =
  | { kind: 'subscribe'; id: string; from: string; request: SubscribeRequest }
  | { kind: 'answer'; id: string; status: number; message: string }

const channel = (processId: string) => `realtime:${processId}`
const missingClient = () => new ApiError(404, 'Missing or invalid client id.')

export class RealtimeService {
  /** What each local stream counts against, for renewing its leases. */
  private entries = new Map<string, ClientEntry>()
  private asked = new Map<
    string,
    { resolve: (m: { status: number; message: string }) => void; timer: NodeJS.Timeout }
  >()
  /** How to end each local stream (its response). */
  private enders = new Map<string, () => void>()
  private unsubscribe: () => void
  private stopResumed: () => void
  private renewal: NodeJS.Timeout

  constructor(
    private hub: RealtimeHub,
    private auth: AuthService,
    private bus: Bus,
    private directory: ClientDirectory,
    private processId: string,
    readonly limits: RealtimeLimits = defaultRealtimeLimits,
    private options = { askTimeoutMs: 5000, renewMs: 20_000 },
  ) {
    this.unsubscribe = bus.subscribe(channel(processId), (m) => void this.onMessage(m as Message))
    // Scaled out, record events reach streams through the bus, even this process's own: when it
    // comes back after an outage, every stream has missed what was published meanwhile, and none
    // can know. Ended, they reconnect (the SDK does so by itself) and the app refetches on
    // PB_CONNECT.
    this.stopResumed = bus.onResumed(() => {
      const streams = this.enders.size
      for (const end of [...this.enders.values()]) end()
      if (streams) log.warn({ streams }, 'the bus is back: realtime streams ended to reconnect')
    })
    this.renewal = setInterval(() => {
      this.directory.renew([...this.entries.values()]).catch(() => {})
    }, options.renewMs)
    this.renewal.unref()
  }

  /** A new stream from `address`; null when that address holds its limit of streams already. */
  async open(
    address: string,
    send: RealtimeClient['send'],
    end: () => void,
  ): Promise<RealtimeClient | null> {
    const client = this.hub.connect(address, send)
    const entry: ClientEntry = { id: client.id, address }
    let admitted: boolean
    try {
      admitted = await this.directory.open(entry, this.limits.connectionsPerAddress)
    } catch (err) {
      // The shared directory (Redis) cannot be reached: not the client's fault (the stream's
      // handler answers 503), and no count of the address is kept.
      this.hub.disconnect(client.id)
      throw err
    }
    if (!admitted) {
      this.hub.disconnect(client.id)
      return null
    }
    this.entries.set(client.id, entry)
    this.enders.set(client.id, end)
    return client
  }

  close(id: string): void {
    this.hub.disconnect(id)
    this.enders.delete(id)
    const entry = this.entries.get(id)
    if (!entry) return
    this.entries.delete(id)
    this.directory.close(entry).catch(() => {})
  }

  /** POST /api/realtime, on whichever process it reached. Throws ApiError. */
  async subscribe(request: SubscribeRequest): Promise<void> {
    const wanted = new Set(request.keys.filter(Boolean)).size
    if (this.limits.subscriptionsPerClient && wanted > this.limits.subscriptionsPerClient) {
      throw new ApiError(
        429,
        `A realtime client may hold at most ${this.limits.subscriptionsPerClient} subscriptions.`,
      )
    }
    if (this.hub.get(request.clientId)) return this.apply(request)
    const owner = await this.directory.locate(request.clientId).catch(() => undefined)
    if (!owner || owner === this.processId) throw missingClient()
    const answer = await this.ask(owner, request)
    if (answer.status !== 204) throw new ApiError(answer.status, answer.message)
  }

  stop(): void {
    clearInterval(this.renewal)
    this.unsubscribe()
    this.stopResumed()
    for (const { timer, resolve } of this.asked.values()) {
      clearTimeout(timer)
      resolve({ status: 404, message: missingClient().message })
    }
  }

  /** Applies a subscription request to a stream of this process. */
  private async apply(request: SubscribeRequest): Promise<void> {
    const client = this.hub.get(request.clientId)
    const entry = this.entries.get(request.clientId)
    if (!client || !entry) throw missingClient()
    if (client.address !== request.address) throw new ApiError(400, 'Invalid realtime client.')
    const caller: Caller = await this.auth.callerFromHeader(request.authorization)
    const before = client.caller?.auth?.id
    // A guest may sign in on an open stream; any other change of identity is refused.
    if (client.caller && before && before !== caller.auth?.id) {
      throw new ApiError(403, "The current and the previous request authorization don't match.")
    }
    const user = caller.auth ? String(caller.auth.id) : undefined
    if (user && entry.user !== user) {
      let admitted: boolean
      try {
        admitted = await this.directory.claim({ ...entry, user }, this.limits.connectionsPerUser)
      } catch (err) {
        // The shared directory (Redis) cannot be reached: unavailable, as for opening a stream,
        // not a 429 telling every signed-in user they hold too many streams.
        log.warn({ err }, 'realtime: a stream could not be counted for its user')
        throw new ApiError(503, 'Realtime is unavailable, try again.')
      }
      if (!admitted) throw new ApiError(429, 'Too many realtime connections for this user.')
      entry.user = user
    }
    if (!this.hub.get(request.clientId)) throw missingClient() // it went away meanwhile
    this.hub.setSubscriptions(request.clientId, caller, request.keys)
  }

  private ask(
    owner: string,
    request: SubscribeRequest,
  ): Promise<{ status: number; message: string }> {
    const id = newRecordId()
    return new Promise((resolve) => {
      // No answer: the process holding the stream is gone, and the stream with it.
      const timer = setTimeout(() => {
        this.asked.delete(id)
        resolve({ status: 404, message: missingClient().message })
      }, this.options.askTimeoutMs)
      this.asked.set(id, { resolve, timer })
      this.bus.publish(channel(owner), {
        kind: 'subscribe',
        id,
        from: this.processId,
        request,
      } satisfies Message)
    })
  }

  private async onMessage(m: Message) {
    if (m.kind === 'answer') {
      const waiting = this.asked.get(m.id)
      if (!waiting) return
      clearTimeout(waiting.timer)
      this.asked.delete(m.id)
      return waiting.resolve({ status: m.status, message: m.message })
    }
    let answer = { status: 204, message: '' }
    try {
      await this.apply(m.request)
    } catch (err) {
      answer =
        err instanceof ApiError
          ? { status: err.status, message: err.message }
          : { status: 500, message: 'Something went wrong while processing your request.' }
    }
    this.bus.publish(channel(m.from), { kind: 'answer', id: m.id, ...answer } satisfies Message)
  }
}
