import { ApiError } from '../../tools/api-error.ts'
import type { CollectionDef, FieldDef } from './collection-def.ts'
import { collections } from './schema.ts'

const byKey = new Map<string, CollectionDef>()
for (const c of collections) {
  byKey.set(c.name.toLowerCase(), c)
  byKey.set(c.id.toLowerCase(), c)
}

/** The collection named (case-insensitive) or with that id, as PocketBase resolves path params. */
export function findCollection(nameOrId: string): CollectionDef | undefined {
  // The keys are lower case: a name asked in lower case (nearly all) needs no copy.
  return byKey.get(nameOrId) ?? byKey.get(nameOrId.toLowerCase())
}

export function requireCollection(nameOrId: string): CollectionDef {
  const found = findCollection(nameOrId)
  if (!found) throw new ApiError(404, 'Missing collection context.')
  return found
}

export function findField(collection: CollectionDef, name: string): FieldDef | undefined {
  return collection.fields.find((f) => f.name === name)
}

export { collections }
