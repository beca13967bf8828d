/**
 * The ledger audit command (`npm run admin -w @meshwork/server -- audit`) on a live database: it
 * passes after real activity (sign-ups, a paid chat, admin movements, a deleted account) and with a
 * hold awaiting a deleted request's charge, and fails, naming what is wrong, on a deliberately
 * broken one (a hold awaiting a charge tampered with among them). SQLite and PostgreSQL.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { requireCollection } from '../src/core/collections/registry.ts'
import { holdCredits } from '../src/core/ledger/reservation.ts'
import { server as superuser } from '../src/core/records/caller.ts'
import { withUnitOfWork } from '../src/core/records/unit-of-work.ts'
import { newRecordId } from '../src/tools/ids.ts'
import { nowDate } from '../src/tools/dates.ts'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { adjustBalance } from './support/ledger.ts'
import { postJson, servingNode, waitUntil } from './support/network.ts'

const serverRoot = fileURLToPath(new URL('..', import.meta.url))

/** Runs the real command line on the server's database; answers its exit code and output. */
async function audit(server: TestServer): Promise<{ code: number; out: string }> {
  const config = server.core.config
  const env: NodeJS.ProcessEnv = { ...process.env, MESHWORK_DATA_DIR: config.dataDir }
  if (config.databaseUrl) {
    env.DATABASE_URL = config.databaseUrl
    env.MESHWORK_DATABASE_SCHEMA = config.databaseSchema
  }
  try {
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'src/cli/admin.ts', 'audit'], {
      cwd: serverRoot,
      env,
    })
    return { code: 0, out: stdout }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, out: e.stdout + e.stderr }
  }
}

describe.each(dialects)('[%s] ledger audit command', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect)
  })
  afterAll(() => server.stop())

  it('passes on a live database after real activity, and says what it checked', async () => {
    const stories = await modelId(server)
    const { node } = await servingNode(server, stories)
    const pb = await signUp(server, 'audited')
    const conv = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: pb.authStore.record!.id })
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt: 'Hello there' },
      pb.authStore.token,
    )
    const id = sent.body.request_id as string
    await waitUntil(
      async () => (await pb.collection('requests').getOne(id)).status === 'completed',
      10_000,
      'answer',
    )
    await adjustBalance(server, pb.authStore.record!.id, 12.345)
    const leaving = await signUp(server, 'leaving')
    await leaving.collection('users').delete(leaving.authStore.record!.id)
    node.kill()

    const { code, out } = await audit(server)
    expect(out).toMatch(/^ok {3}exact amounts: \d+ balances, \d+ ledger rows/m)
    expect(out).toMatch(
      /^ok {3}balances: \d+ balances equal the sum of their ledger rows .*; 1 closed accounts sum to 0/m,
    )
    expect(out).toMatch(/^ok {3}holds: 0 credits held/m)
    expect(out).toMatch(
      /^ok {3}transfers: inference: [\d.]+ credits over 1 requests, debits = credits/m,
    )
    expect(out).toMatch(/Ledger audit passed\./)
    expect(code).toBe(0)
  }, 60_000)

  it("counts a hold awaiting a deleted request's charge, and fails when one is tampered with", async () => {
    const db = server.core.database.db
    const stories = await modelId(server)
    const pb = await signUp(server, 'deleting')
    const user = pb.authStore.record!.id
    const conversation = await pb.collection('conversations').create({ title: 'New Chat', user })
    // A request running on a node (no node here answers: its charge never comes in this test).
    const request = newRecordId()
    await withUnitOfWork(server.core, async (uow) => {
      const r = await holdCredits(uow, {
        user,
        estimatedInput: 4,
        maxOutput: 256,
        minOutput: 16,
        multiplierUnits: 1000,
      })
      await uow.trx
        .insertInto('requests')
        .values({
          id: request,
          user,
          conversation: conversation.id,
          model: stories,
          status: 'processing',
          reserved: r.amount,
        })
        .execute()
    })
    await pb.collection('conversations').delete(conversation.id)
    const kept = await db
      .selectFrom('_deletion_holds')
      .select(['user', 'amount'])
      .where('id', '=', request)
      .executeTakeFirst()
    expect(kept).toEqual({ user, amount: 260_000 })

    const passing = await audit(server)
    expect(passing.out).toMatch(
      /^ok {3}holds: 260 credits held in \d+ balances equal the reserves of open requests and the 260 awaiting a deletion's charge/m,
    )
    expect(passing.code).toBe(0)

    // More kept than held, and a kept hold of an account that has no balance.
    await db
      .updateTable('_deletion_holds')
      .set({ amount: 261_000 })
      .where('id', '=', request)
      .execute()
    await db
      .insertInto('_deletion_holds')
      .values({ id: newRecordId(), user: 'nosuchuser0001', amount: 5_000, created: nowDate() })
      .execute()
    const failing = await audit(server)
    expect(failing.code).toBe(1)
    expect(failing.out).toContain('FAIL holds:')
    expect(failing.out).toContain(
      `user ${user}: 260 held but its open requests reserve 0 and deletions awaiting their charge hold 261`,
    )
    expect(failing.out).toContain(
      'user nosuchuser0001: deletions awaiting their charge hold 5 without a balance',
    )
    // Put back as it was, for the next test.
    await db.deleteFrom('_deletion_holds').execute()
    await db.updateTable('user_balances').set({ held: 0 }).where('user', '=', user).execute()
  }, 60_000)

  it('exits non-zero on a broken database and names every broken invariant', async () => {
    const db = server.core.database.db
    const victim = await signUp(server, 'broken')
    const user = victim.authStore.record!.id
    // Credits out of thin air (no row), a hold without a request, and half of a transfer.
    await db
      .updateTable('user_balances')
      .set({ balance: 1_000_500, held: 7_000 })
      .where('user', '=', user)
      .execute()
    const other = await server.core.records.create(superuser, requireCollection('users'), {
      email: `o${newRecordId()}@example.com`,
      password: 'password123',
      passwordConfirm: 'password123',
    })
    await db
      .insertInto('user_credit_txs')
      .values({
        id: newRecordId(),
        user: other.id,
        type: 'credit_inference_request',
        amount: 2_000,
        balance_after: 1_002_000,
        request: 'forgedrequest01',
        description: 'forged',
        created: nowDate(),
        updated: nowDate(),
      })
      .execute()
    await db
      .updateTable('user_balances')
      .set({ balance: 1_002_000, total_earned: 2_000 })
      .where('user', '=', String(other.id))
      .execute()

    // Pending earnings on a balance that no pending row stands for.
    await db
      .updateTable('user_balances')
      .set({ pending_earnings: 3_000 })
      .where('user', '=', String(other.id))
      .execute()

    const { code, out } = await audit(server)
    expect(code).toBe(1)
    expect(out).toContain(`FAIL balances:`)
    expect(out).toContain(`user ${user}: balance 1000.5 but its ledger rows sum to 1000`)
    expect(out).toContain(`FAIL holds:`)
    expect(out).toContain(`user ${user}: 7 held but its open requests reserve 0`)
    expect(out).toContain('FAIL transfers:')
    expect(out).toContain(
      'inference transfer of request forgedrequest01: credits exceed debits by 2',
    )
    expect(out).toContain('FAIL pending earnings:')
    expect(out).toContain(`user ${other.id}: 3 pending but its pending rows sum to 0`)
    expect(out).toMatch(/^ok {3}exact amounts/m)
    expect(out).toContain('LEDGER AUDIT FAILED.')
  }, 60_000)
})
