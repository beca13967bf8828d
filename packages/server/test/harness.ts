/**
 * @module Test harness: a real coordinator on a real port, on a fresh SQLite file or a fresh
 * PostgreSQL schema, and official `pocketbase` SDK clients pointed at it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EventSource } from 'eventsource'
import pg from 'pg'
import PocketBase from 'pocketbase'
import type { Config } from '../src/config.ts'
import { startServer, type RunningServer, type ServerExtras } from '../src/server.ts'

// The SDK's realtime service uses the browser's EventSource.
;(globalThis as { EventSource?: unknown }).EventSource ??= EventSource

export type DialectName = 'sqlite' | 'postgres'

/** SQLite always; PostgreSQL when TEST_DATABASE_URL is set (CI sets it). */
export const dialects: DialectName[] = process.env.TEST_DATABASE_URL
  ? ['sqlite', 'postgres']
  : ['sqlite']

export interface TestServer extends RunningServer {
  /** A fresh SDK client (auto-cancellation off, as load tests need). */
  client(): PocketBase
  stop(): Promise<void>
}

let counter = 0

export async function startTestServer(
  dialect: DialectName,
  overrides: Partial<Config> = {},
  extras: ServerExtras = {},
): Promise<TestServer> {
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'meshwork-test-'))
  const schema =
    overrides.databaseSchema ?? `t_${process.pid}_${Date.now().toString(36)}_${counter++}`
  const config: Config = {
    port: 0,
    host: '127.0.0.1',
    dataDir,
    initialCredits: 1000,
    tokenTtlSeconds: 3600,
    localNode: false,
    webDist: join(dataDir, 'no-web'),
    ...(dialect === 'postgres'
      ? { databaseUrl: process.env.TEST_DATABASE_URL, databaseSchema: schema }
      : {}),
    // Coordinators of one test share a schema, and with it their Redis channels; other tests and
    // other runs on the same Redis do not hear them.
    redisPrefix: `meshwork-test-${overrides.databaseSchema ?? schema}`,
    ...overrides,
  }
  const server = await startServer(config, extras)
  return {
    ...server,
    client() {
      const pb = new PocketBase(server.url)
      pb.autoCancellation(false)
      return pb
    },
    async stop() {
      await server.close()
      rmSync(dataDir, { recursive: true, force: true })
      if (dialect === 'postgres') await dropSchema(schema)
    },
  }
}

async function dropSchema(schema: string) {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } finally {
    await client.end()
  }
}

let emailCounter = 0

/** Registers and signs in a new user; returns the signed-in client. */
/** Another coordinator process on `peer`'s PostgreSQL schema and data folder (scaled out). */
export function startPeerServer(
  peer: TestServer,
  overrides: Partial<Config> = {},
  extras: ServerExtras = {},
): Promise<TestServer> {
  const { databaseSchema, dataDir } = peer.core.config
  return startTestServer('postgres', { databaseSchema, dataDir, ...overrides }, extras)
}

export async function signUp(server: TestServer, name?: string): Promise<PocketBase> {
  const pb = server.client()
  const email = `${name ?? 'user'}${Date.now().toString(36)}${emailCounter++}@example.com`
  await pb
    .collection('users')
    .create({ email, password: 'password123', passwordConfirm: 'password123' })
  await pb.collection('users').authWithPassword(email, 'password123')
  return pb
}

export function expectApiError(err: unknown): {
  status: number
  response: Record<string, unknown>
} {
  return err as { status: number; response: Record<string, unknown> }
}
