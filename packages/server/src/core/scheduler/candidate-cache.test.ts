import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from '../../db/database.ts'
import { migrateToLatest } from '../../db/migrate.ts'
import { MemoryBus } from '../../tools/bus/memory-bus.ts'
import { requireCollection } from '../collections/registry.ts'
import { RecordEvents } from '../records/record-events.ts'
import type { Row } from '../records/serialize.ts'
import { CandidateCache } from './candidate-cache.ts'

const STAMP = '2026-11-24 00:00:00.000Z'

describe('the nodes serving each model, held between passes', () => {
  let database: Database
  let events: RecordEvents
  let clock: number
  let cache: CandidateCache
  let MODEL: string

  beforeEach(async () => {
    database = await openDatabase({ file: ':memory:' })
    await migrateToLatest(database.db)
    const model = await database.db.selectFrom('models').select('id').executeTakeFirstOrThrow()
    MODEL = String(model.id)
    events = new RecordEvents()
    clock = 0
    cache = new CandidateCache(
      () => database.db,
      events,
      new MemoryBus(),
      2_000,
      () => clock,
    )
    for (const id of ['node00000000001', 'node00000000002']) {
      await database.db
        .insertInto('nodes')
        .values({ id, user: `owner-${id}`, status: 'online', is_active: 1, benched_until: '' })
        .execute()
      await serve(id, true)
    }
  })
  afterEach(async () => {
    cache.close()
    await database.close()
  })

  async function serve(node: string, serving: boolean) {
    const id = `nm${node.slice(-13)}`
    await database.db.deleteFrom('node_models').where('id', '=', id).execute()
    await database.db
      .insertInto('node_models')
      .values({ id, node, model: MODEL, is_serving: serving ? 1 : 0, created: STAMP })
      .execute()
    return id
  }
  /** A write as the core makes it: stored, then its event. */
  async function updateNode(id: string, values: Row) {
    await database.db.updateTable('nodes').set(values).where('id', '=', id).execute()
    const row = await database.db
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    events.emit({ action: 'update', collection: requireCollection('nodes'), row })
  }
  const ids = async () => (await cache.candidates(MODEL)).map((c) => c.id).sort()
  const reads = () => database.statements.count

  it('reads a model once, then answers from memory until the time to live ends', async () => {
    expect(await ids()).toEqual(['node00000000001', 'node00000000002'])
    const before = reads()
    clock += 1_999
    await ids()
    expect(reads()).toBe(before)
    clock += 1
    await ids()
    expect(reads()).toBe(before + 1)
  })

  it('follows a node taken out, benched or back, without reading again', async () => {
    await ids()
    const before = reads()
    await updateNode('node00000000001', { is_active: 0 })
    await updateNode('node00000000002', { benched_until: '2999-01-01 00:00:00.000Z' })
    expect(await ids()).toEqual([])
    await updateNode('node00000000002', { benched_until: '', reputation_score: 7 })
    expect(await cache.candidates(MODEL)).toMatchObject([{ id: 'node00000000002', reputation: 7 }])
    // Three writes, each with the read of its row for the event: nothing read by the cache.
    expect(reads() - before).toBe(3 * 2)
  })

  it('counts the active nodes that are online or busy, as available_models does', async () => {
    const view = async () =>
      Number(
        (
          await database.db
            .selectFrom('available_models')
            .select('node_count')
            .where('id', '=', MODEL)
            .executeTakeFirstOrThrow()
        ).node_count,
      )
    expect(await cache.onlineCount(MODEL)).toBe(2)
    await updateNode('node00000000001', { status: 'offline' })
    await updateNode('node00000000002', { status: 'busy' })
    expect(await cache.onlineCount(MODEL)).toBe(1)
    expect(await view()).toBe(1)
    await updateNode('node00000000002', { is_active: 0 })
    expect(await cache.onlineCount(MODEL)).toBe(0)
    expect(await view()).toBe(0)
  })

  it('drops a node that stops serving the model, and reads again for one that starts', async () => {
    await ids()
    const id = await serve('node00000000001', false)
    const stopped = await database.db
      .selectFrom('node_models')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    events.emit({ action: 'update', collection: requireCollection('node_models'), row: stopped })
    expect(await ids()).toEqual(['node00000000002'])
    await serve('node00000000001', true)
    events.emit({
      action: 'update',
      collection: requireCollection('node_models'),
      row: { ...stopped, is_serving: 1 },
    })
    const before = reads()
    expect(await ids()).toEqual(['node00000000001', 'node00000000002'])
    expect(reads()).toBe(before + 1)
  })

  it('does not keep a read that a change overtook', async () => {
    const first = cache.candidates(MODEL)
    // A change commits while the read is under way.
    events.emit({
      action: 'update',
      collection: requireCollection('nodes'),
      row: { id: 'node00000000001', is_active: 0 },
    })
    expect(await first).toHaveLength(2)
    const before = reads()
    await ids()
    expect(reads()).toBe(before + 1)
  })
})
