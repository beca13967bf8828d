import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from '../../db/database.ts'
import { migrateToLatest } from '../../db/migrate.ts'
import { cachedConfig } from './sampling-defaults.ts'

describe('the config row, cached', () => {
  let database: Database
  let clock = 0
  beforeEach(async () => {
    database = await openDatabase({ file: ':memory:' })
    await migrateToLatest(database.db)
    clock = 1_000
  })
  afterEach(() => database.close())

  const setTemperature = (t: number) =>
    database.db.updateTable('config').set({ default_temperature: t }).execute()

  it('reads the row once within the time to live, and again after it', async () => {
    const config = cachedConfig(
      () => database.db,
      5_000,
      () => clock,
    )
    await setTemperature(0.3)
    expect((await config())?.default_temperature).toBe(0.3)
    await setTemperature(0.9)
    clock += 4_999
    expect((await config())?.default_temperature).toBe(0.3)
    clock += 1
    expect((await config())?.default_temperature).toBe(0.9)
  })

  it('shares one read between callers that ask at once', async () => {
    const config = cachedConfig(
      () => database.db,
      5_000,
      () => clock,
    )
    const before = database.statements.count
    const rows = await Promise.all([config(), config(), config()])
    expect(database.statements.count - before).toBe(1)
    expect(new Set(rows).size).toBe(1)
  })

  it('tries again on the next call when a read fails', async () => {
    let fail = true
    const config = cachedConfig(() => {
      if (fail) throw new Error('database unreachable')
      return database.db
    })
    await expect(config()).rejects.toThrow('database unreachable')
    fail = false
    expect((await config())?.default_temperature).toBeTypeOf('number')
  })
})
