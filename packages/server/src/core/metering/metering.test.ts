// The tier is `models`: the tokenizers load the test models' vocabularies through node-llama-cpp
// (getLlama), as the coordinator does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelMirror } from '@meshwork/test-kit'
import { openDatabase, type Database } from '../../db/database.ts'
import { migrateToLatest } from '../../db/migrate.ts'
import { Metering } from './metering.ts'

describe('loading the tokenizers ahead of the first send', () => {
  let database: Database
  let metering: Metering
  const ids: Record<string, string> = {}
  beforeAll(async () => {
    database = await openDatabase({ file: ':memory:' })
    await migrateToLatest(database.db)
    const models = await database.db.selectFrom('models').select(['id', 'name']).execute()
    for (const m of models) ids[String(m.name)] = String(m.id)
    // One more active model whose file is on no folder of this coordinator.
    await database.db
      .updateTable('models')
      .set({ is_active: 0 })
      .where('name', '=', 'llama-2-tiny-random')
      .execute()
    metering = new Metering(database.db, [modelMirror])
  })
  afterAll(async () => {
    await metering.dispose()
    await database.close()
  })

  it('loads every active model it has the file of, and only those', async () => {
    expect(await metering.warmUp()).toBe(1)
    const stories = await metering.tokenizers.get(ids['stories260K'])
    expect(stories?.tokenize('Once upon a time').length).toBeGreaterThan(0)
  })

  it('leaves an inactive model for its first use', async () => {
    const before = database.statements.count
    const tiny = await metering.tokenizers.get(ids['llama-2-tiny-random'])
    // Not loaded ahead: its first use reads the catalogue row now.
    expect(database.statements.count).toBeGreaterThan(before)
    expect(tiny).not.toBeNull()
  })
})
