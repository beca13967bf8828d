/**
 * @module A running request's growing answer reaches its subscribers as update events of the
 * request's row held in memory, with no database write; a job taken from its node clears it.
 */
import type { CoreApp } from '../app.ts'
import { requireCollection } from '../collections/registry.ts'
import type { Row } from '../records/serialize.ts'
import type { Work } from './work.ts'

/** The growing response goes out as an update event of the in-memory row: no database write. */
export function publishPartial(core: CoreApp, work: Work): void {
  if (!work.row || !work.job) return
  const row = partialRow(work.row, work)
  core.events.emit({ action: 'update', collection: requireCollection('requests'), row })
}

/** The stored row as its subscribers see it while it runs: the text streamed so far. */
export function partialRow(stored: Row, work: Work): Row {
  return {
    ...stored,
    status: 'processing',
    node: work.job?.nodeId ?? stored.node,
    response: work.job?.meter.shown ?? '',
    is_partial: 1,
  }
}

/** The request waits for another node: its partial text is discarded (the next node's answer
 * replaces it). */
export function publishRequeued(core: CoreApp, row: Row): void {
  core.events.emit({
    action: 'update',
    collection: requireCollection('requests'),
    row: { ...row, status: 'pending', response: '', is_partial: 1 },
  })
}
