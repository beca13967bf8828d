/**
 * @module Server-side fixtures for tests: records only the server may create (nodes, node models,
 * requests), written through the core as the superuser.
 */
import { requireCollection } from '../src/core/collections/registry.ts'
import { server as superuser } from '../src/core/records/caller.ts'
import type { RecordJson } from '../src/core/records/serialize.ts'
import type { TestServer } from './harness.ts'

export function createAsServer(
  server: TestServer,
  collection: string,
  body: Record<string, unknown>,
): Promise<RecordJson> {
  return server.core.records.create(superuser, requireCollection(collection), body)
}

export function updateAsServer(
  server: TestServer,
  collection: string,
  id: string,
  body: Record<string, unknown>,
): Promise<RecordJson> {
  return server.core.records.update(superuser, requireCollection(collection), id, body)
}

export async function modelId(server: TestServer, name = 'stories260K'): Promise<string> {
  const row = await server.core.database.db
    .selectFrom('models')
    .select('id')
    .where('name', '=', name)
    .executeTakeFirstOrThrow()
  return row.id as string
}
