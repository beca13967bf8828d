/**
 * @module Follows requests through the record events the scheduler already emits (the growing
 * partial response, then the settled or failed row), for callers waiting on one request in this
 * process: the `/v1` API. One listener for all, a map lookup per event. The scheduling process
 * is the one that took the call, so its events are local even when scaled out.
 */
import type { Bus } from '../../tools/bus/bus.ts'
import type { RecordBusMessage, RecordEvents } from '../records/record-events.ts'
import type { Row } from '../records/serialize.ts'

/** A request's last statuses: what another process may write to one this process follows. */
const ENDED = new Set(['completed', 'cancelled', 'failed'])

export type RowListener = (row: Row) => void

export class RequestWatch {
  private listeners = new Map<string, RowListener>()
  private readonly stops: Array<() => void>

  /**
   * Scaled out, another process may end a request this one follows (a drain hands its queue over,
   * a survivor takes a lapsed lease's requests, a cancel ended where it was asked): its end comes
   * over the bus. Only ends: the bus also echoes this process's own events, later, and an echoed
   * partial would look like text going backwards. A listener is gone once it heard its end.
   */
  constructor(events: RecordEvents, bus?: Bus) {
    this.stops = [
      events.on((change) => {
        if (change.collection.name !== 'requests' || change.action === 'delete') return
        this.listeners.get(String(change.row.id))?.(change.row)
      }),
    ]
    if (bus?.kind === 'redis')
      this.stops.push(
        bus.subscribe('records', (message) => {
          const m = message as RecordBusMessage
          if (m?.collection !== 'requests' || m.action === 'delete') return
          if (ENDED.has(String(m.row?.status))) this.listeners.get(String(m.row.id))?.(m.row)
        }),
      )
  }

  /** Calls `listener` with each emitted row of the request until the returned function is called. */
  watch(requestId: string, listener: RowListener): () => void {
    this.listeners.set(requestId, listener)
    return () => {
      if (this.listeners.get(requestId) === listener) this.listeners.delete(requestId)
    }
  }

  get size(): number {
    return this.listeners.size
  }

  close(): void {
    for (const stop of this.stops) stop()
    this.listeners.clear()
  }
}

/** A push queue read with `for await`; `end` lets the reader finish once drained. */
export class EventQueue<T> implements AsyncIterable<T> {
  private items: T[] = []
  private waiting: ((r: IteratorResult<T>) => void) | null = null
  private ended = false

  push(item: T): void {
    if (this.ended) return
    if (this.waiting) {
      const w = this.waiting
      this.waiting = null
      w({ value: item, done: false })
    } else this.items.push(item)
  }

  end(): void {
    this.ended = true
    if (this.waiting && this.items.length === 0) {
      const w = this.waiting
      this.waiting = null
      w({ value: undefined, done: true })
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.items.length) return Promise.resolve({ value: this.items.shift()!, done: false })
        if (this.ended) return Promise.resolve({ value: undefined, done: true })
        return new Promise((resolve) => (this.waiting = resolve))
      },
    }
  }
}
