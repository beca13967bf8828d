import { randomString } from '../tools/ids.ts'
import type { Db } from './database.ts'

/** Reads a server setting, creating it with `make()` the first time. Safe when several processes
 * start together: the first insert wins and everybody reads that value. */
export async function getOrCreateSetting(db: Db, key: string, make: () => string): Promise<string> {
  const found = await db
    .selectFrom('_settings')
    .select('value')
    .where('key', '=', key)
    .executeTakeFirst()
  if (found) return found.value as string
  await db
    .insertInto('_settings')
    .values({ key, value: make() })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute()
  const row = await db
    .selectFrom('_settings')
    .select('value')
    .where('key', '=', key)
    .executeTakeFirstOrThrow()
  return row.value as string
}

export const newSecret = () => randomString(64)
