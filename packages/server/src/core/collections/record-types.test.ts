/**
 * The record types of `@meshwork/protocol/records` (what the web app reads) name exactly the fields
 * the records API writes for each collection: PocketBase's `collectionId`, `collectionName` and
 * `id`, then every field of the definition that is not hidden. A field added to, renamed in or
 * dropped from `schema.ts` without its type in the protocol fails here (and the protocol's own
 * field lists are checked against its types by the compiler).
 */
import { RECORD_FIELDS } from '@meshwork/protocol/records'
import { describe, expect, it } from 'vitest'
import { findCollection } from './registry.ts'

describe('protocol record types against the collection definitions', () => {
  for (const [name, fields] of Object.entries(RECORD_FIELDS)) {
    it(`${name}: the same field names`, () => {
      const collection = findCollection(name)
      expect(collection?.name).toBe(name)
      const written = [
        'collectionId',
        'collectionName',
        'id',
        ...collection!.fields.filter((f) => !f.hidden).map((f) => f.name),
      ]
      expect(Object.keys(fields).sort()).toEqual(written.sort())
    })
  }
})
