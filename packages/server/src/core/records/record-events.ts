import type { CollectionDef } from '../collections/collection-def.ts'
import type { Row } from './serialize.ts'
import { callEach } from '../../tools/background.ts'

export type RecordAction = 'create' | 'update' | 'delete'

export interface RecordChange {
  action: RecordAction
  collection: CollectionDef
  /** The stored row after the change (before it, for deletes). */
  row: Row
}

/** A record change as it travels on the bus channel `records` (to every process, scaled out). */
export interface RecordBusMessage {
  action: RecordAction
  /** The collection's name. */
  collection: string
  row: Row
}

type Listener = (change: RecordChange) => void

/** Fired after a write commits; realtime and other reactions subscribe here, core never calls them. */
export class RecordEvents {
  private listeners = new Set<Listener>()

  on(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Each listener runs on its own: one that throws neither stops the others nor fails the
   * write, which has committed already. */
  emit(change: RecordChange): void {
    callEach(this.listeners, [change], `record event listener (${change.collection.name})`)
  }
}
