/**
 * Hostile callers against the records API, auth and realtime, from the outside (raw HTTP and the
 * official SDK): each case is a way one user could hurt or read another that once worked.
 * SQLite, and PostgreSQL when TEST_DATABASE_URL is set.
 */
import type { RecordSubscription } from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyEntry } from '../../src/core/ledger/ledger-entry.ts'
import { holdEarning } from '../../src/core/ledger/pending-earnings.ts'
import { withUnitOfWork } from '../../src/core/records/unit-of-work.ts'
import { createAsServer, modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import { waitUntil } from '../support/network.ts'
import { openStream, postSubscriptions } from '../support/sse.ts'

type Event = RecordSubscription<Record<string, unknown>>

/** Time for events in flight to reach a stream (as in realtime.test.ts). */
const settle = () => new Promise((r) => setTimeout(r, 150))

describe.each(dialects)('hostile sweep of records, auth and realtime [%s]', (dialect) => {
  let server: TestServer
  let model: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    model = await modelId(server)
  })
  afterAll(() => server.stop())

  it("a subscription with a malformed `fields` option does not stop other users' events", async () => {
    const alice = await signUp(server, 'sweep-alice')
    const mallory = await signUp(server, 'sweep-mallory')
    // Mallory subscribes first, so the hub meets her subscription before Alice's on every event.
    const theirs: Event[] = []
    await mallory.collection('requests').subscribe('*', (e) => theirs.push(e), { fields: 'a b' })
    const mine: Event[] = []
    await alice.collection('requests').subscribe('*', (e) => mine.push(e))
    const conv = await alice.collection('conversations').create({ model })
    const request = await createAsServer(server, 'requests', {
      user: alice.authStore.record!.id,
      conversation: conv.id,
      model,
      prompt: 'hello',
    })
    await waitUntil(() => mine.length >= 1, 5000, "Alice's request event")
    expect(mine[0].record.id).toBe(request.id)
    // The malformed subscription itself matches nothing (it cannot be applied).
    expect(theirs).toEqual([])
    await alice.realtime.unsubscribe()
    await mallory.realtime.unsubscribe()
  })

  it("signing up with a deleted account's id inherits none of its requests or refunds", async () => {
    const alice = await signUp(server, 'sweep-leaver')
    const aliceId = alice.authStore.record!.id
    const key = await alice.send<{ id: string }>('/api/keys', {
      method: 'POST',
      body: { name: 'script' },
    })
    // What the OpenAI route writes for a call made with the key: no conversation to cascade with.
    const request = await createAsServer(server, 'requests', {
      user: aliceId,
      api_key: key.id,
      model,
      prompt: 'my api prompt',
      response: 'my api answer',
      status: 'completed',
      cost: 5,
    })
    // Alice also paid 5 credits to a node on probation: held for its owner, refunded to her if
    // the node is gone before it is verified.
    const owner = await signUp(server, 'sweep-probation-owner')
    const node = await createAsServer(server, 'nodes', {
      user: owner.authStore.record!.id,
      device_name: 'new box',
    })
    await withUnitOfWork(server.core, async (uow) => {
      const paid = { requestId: String(request.id), amount: 5000 }
      await applyEntry(uow, {
        user: aliceId,
        type: 'debit_inference_request',
        amount: paid.amount,
        description: 'Spent on inference request',
        request: paid.requestId,
      })
      await holdEarning(uow, {
        ...paid,
        nodeId: String(node.id),
        owner: owner.authStore.record!.id,
        payer: aliceId,
      })
    })
    await alice.collection('users').delete(aliceId)
    // Ids are public (every node shows its owner's) and a sign-up may choose its own.
    const mallory = server.client()
    const email = `sweep-claimer${Date.now()}@example.com`
    await mallory
      .collection('users')
      .create({ id: aliceId, email, password: 'password123', passwordConfirm: 'password123' })
    await mallory.collection('users').authWithPassword(email, 'password123')
    expect(
      await mallory.collection('requests').getFullList({ filter: `user = "${aliceId}"` }),
    ).toEqual([])
    const seen = await mallory.collection('requests').getOne(String(request.id))
    expect(seen).not.toHaveProperty('prompt')
    expect(seen).not.toHaveProperty('response')
    // The node goes before it was verified: Alice forfeits her refund, and nobody else gets it.
    await owner.collection('nodes').delete(String(node.id))
    expect(await balanceOf(server, aliceId)).toMatchObject({ balance: 1000 })
    await expectAuditPasses(server)
  })

  it('answers a date out of range with 400, not 500', async () => {
    const alice = await signUp(server, 'sweep-dates')
    const node = await createAsServer(server, 'nodes', {
      user: alice.authStore.record!.id,
      device_name: 'box',
    })
    // As JSON text. A number is read as unix seconds: 1e20 s is no date at all, 8640000000001 s
    // is one second past the last one JavaScript has, and 1e309 parses to Infinity. A date after
    // 9999 has no PocketBase form either.
    const dates = ['1e20', '-1e20', '8640000000001', '1e309', '253402300800', '"+275760-09-13"']
    for (const at of dates) {
      const res = await fetch(`${server.url}/api/collections/node_models/records`, {
        method: 'POST',
        headers: { Authorization: alice.authStore.token, 'Content-Type': 'application/json' },
        body: `{"node": "${node.id}", "model": "${model}", "retry_requested_at": ${at}}`,
      })
      expect(res.status, at).toBe(400)
      const body = (await res.json()) as { data: Record<string, { code: string }> }
      expect(body.data.retry_requested_at.code).toBe('validation_invalid_format')
    }
    const last = await alice
      .collection('node_models')
      .create({ node: node.id, model, retry_requested_at: '9999-12-31 23:59:59.999Z' })
    expect(last.retry_requested_at).toBe('9999-12-31 23:59:59.999Z')
  })

  it("refuses NUL hidden under `__proto__` in a form's @jsonPayload, and writes nothing", async () => {
    const alice = await signUp(server, 'sweep-proto')
    // JSON.parse keeps `__proto__` as an own key; copied onto the body with assignment it became
    // the body's prototype, so the title was read through it past the NUL check (a 500 on
    // PostgreSQL, a stored NUL on SQLite).
    const form = new FormData()
    form.append('@jsonPayload', '{"__proto__": {"title": "a\\u0000b"}}')
    const res = await fetch(`${server.url}/api/collections/conversations/records`, {
      method: 'POST',
      headers: { Authorization: alice.authStore.token },
      body: form,
    })
    expect(res.status).toBe(400)
    expect(await alice.collection('conversations').getFullList()).toEqual([])
  })

  it("a stream signed in with a token that a password change or the account's deletion revoked goes on as a guest's", async () => {
    const alice = await signUp(server, 'sweep-stolen')
    const aliceId = alice.authStore.record!.id
    const bob = await signUp(server, 'sweep-bob')
    const keys = ['conversations/*', 'requests/*']
    // Mallory holds a copy of Alice's token and listens with it.
    const stolen = await openStream(server.url)
    expect(
      (await postSubscriptions(server.url, stolen.clientId, keys, alice.authStore.token)).status,
    ).toBe(204)
    await alice.collection('conversations').create({ model, title: 'before' })
    await stolen.waitFor(1)

    await alice.collection('users').update(aliceId, {
      oldPassword: 'password123',
      password: 'newpassword1',
      passwordConfirm: 'newpassword1',
    })
    await alice.collection('users').authWithPassword(alice.authStore.record!.email, 'newpassword1')
    // Streams with the new token and Bob's see what follows, and so show when it went out.
    const mine = await openStream(server.url)
    await postSubscriptions(server.url, mine.clientId, keys, alice.authStore.token)
    const bobs = await openStream(server.url)
    await postSubscriptions(server.url, bobs.clientId, ['requests/*'], bob.authStore.token)
    const conv = await alice.collection('conversations').create({ model, title: 'after' })
    await mine.waitFor(1)
    // Others' requests are for signed-in users only: gone with the account.
    await alice.collection('users').delete(aliceId)
    const bobsConv = await bob.collection('conversations').create({ model })
    await createAsServer(server, 'requests', {
      user: bob.authStore.record!.id,
      conversation: bobsConv.id,
      model,
      prompt: 'hi',
    })
    await bobs.waitFor(1)
    await settle()
    expect(stolen.events.map((e) => (e.data.record as { id: string }).id)).not.toContain(conv.id)
    expect(stolen.events).toHaveLength(1)
    for (const stream of [stolen, mine, bobs]) await stream.close()
  })

  it("a stream stays signed in when the user's row changes otherwise (a new name)", async () => {
    const alice = await signUp(server, 'sweep-renamed')
    const stream = await openStream(server.url)
    await postSubscriptions(server.url, stream.clientId, ['conversations/*'], alice.authStore.token)
    await alice.collection('users').update(alice.authStore.record!.id, { name: 'Alice B.' })
    await settle()
    const conv = await alice.collection('conversations').create({ model, title: 'renamed' })
    const [event] = await stream.waitFor(1)
    expect((event.data.record as { id: string }).id).toBe(conv.id)
    await stream.close()
  })

  it('a password change revokes the old token even while a request with it is being checked', async () => {
    const alice = await signUp(server, 'sweep-revoker')
    const id = alice.authStore.record!.id
    const oldToken = alice.authStore.token
    // A request with the old token has read Alice's row (the old token key) and is about to
    // remember it when the password change commits.
    const gate = holdNextUserLookup(server)
    try {
      const early = fetch(`${server.url}/api/collections/users/records/${id}`, {
        headers: { Authorization: oldToken },
      })
      await waitUntil(() => gate.holding, 5000, 'the lookup of the token owner')
      await alice.collection('users').update(id, {
        oldPassword: 'password123',
        password: 'newpassword1',
        passwordConfirm: 'newpassword1',
      })
      gate.release()
      await early
    } finally {
      gate.uninstall()
    }
    const res = await fetch(`${server.url}/api/collections/users/auth-refresh`, {
      method: 'POST',
      headers: { Authorization: oldToken },
    })
    expect(res.status).toBe(401)
  })
})

/**
 * Hands the result of the server's next `selectFrom('users')` (a token's owner being looked up)
 * back only when released, after the database has answered it: the statement itself is not held,
 * so the database (one connection on SQLite) serves everything else meanwhile.
 */
function holdNextUserLookup(server: TestServer) {
  const database = server.core.database
  const db = database.db
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  let caught = false
  const gate = {
    holding: false,
    release: () => open(),
    uninstall: () => void (database.db = db),
  }
  const wrap = <T extends object>(builder: T): T =>
    new Proxy(builder, {
      get(target, prop) {
        const value = Reflect.get(target, prop) as unknown
        if (typeof value !== 'function') return value
        if (prop === 'executeTakeFirst')
          return async (...args: unknown[]) => {
            const result = await value.apply(target, args)
            gate.holding = true
            await opened
            return result
          }
        return (...args: unknown[]) => {
          const out = value.apply(target, args)
          return out && typeof out === 'object' && 'executeTakeFirst' in out ? wrap(out) : out
        }
      },
    })
  database.db = new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown
      if (typeof value !== 'function') return value
      if (prop !== 'selectFrom') return value.bind(target)
      return (table: string) => {
        const builder = target.selectFrom(table)
        if (caught || table !== 'users') return builder
        caught = true
        return wrap(builder)
      }
    },
  })
  return gate
}
