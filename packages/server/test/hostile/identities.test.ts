/**
 * Hostile sign-ups against identities: a look-alike of someone's e-mail (`Bob@x.com` beside
 * `bob@x.com`), raced or not, and the house account's address registered before the operator turns
 * the built-in node on. E-mails are one identity ignoring case for sign-up, sign-in and the admin
 * CLI; the house is found by the id the system stored, at a domain no sign-up may use, so a
 * squatter owns nothing and earns nothing. The audit passes. SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adjustCredits } from '../../src/cli/admin-commands.ts'
import { issueCredential } from '../../src/core/nodes/node-credentials.ts'
import {
  ensureHouseAccount,
  ensureLocalNode,
  HOUSE_EMAIL,
} from '../../src/local-node/start-local-node.ts'
import { modelId } from '../fixtures.ts'
import { dialects, startTestServer, type TestServer } from '../harness.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import { FakeNode, postJson, waitUntil } from '../support/network.ts'

const password = 'password123'

describe.each(dialects)('[%s] hostile sign-ups: look-alike and reserved identities', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect)
  })
  afterAll(() => server.stop())

  const register = (email: string) =>
    postJson(server, '/api/collections/users/records', {
      email,
      password,
      passwordConfirm: password,
    })
  const login = (identity: string, pass = password) =>
    postJson(server, '/api/collections/users/auth-with-password', { identity, password: pass })

  it('one address ignoring case: sign-up, sign-in and the admin CLI', async () => {
    const tag = Date.now().toString(36)
    const bob = await register(`bob${tag}@example.com`)
    expect(bob.status).toBe(200)
    const lookalike = await register(`Bob${tag}@Example.COM`)
    expect(lookalike.status).toBe(400)
    expect(lookalike.body).toMatchObject({ data: { email: { code: 'validation_not_unique' } } })

    // Two look-alikes at the same moment: exactly one account.
    const raced = await Promise.all([
      register(`eve${tag}@example.com`),
      register(`EVE${tag}@example.com`),
    ])
    expect(raced.map((r) => r.status).sort()).toEqual([200, 400])
    expect(raced.find((r) => r.status === 400)!.body).toMatchObject({
      data: { email: { code: 'validation_not_unique' } },
    })

    const signedIn = await login(`BOB${tag}@EXAMPLE.com`)
    expect(signedIn.status).toBe(200)
    expect((signedIn.body.record as { id: string }).id).toBe(bob.body.id)

    const credited = await adjustCredits(server.core.database.db, {
      email: `  Bob${tag}@example.com `,
      amount: 2.5,
      direction: 'credit',
    })
    expect(credited).toEqual({ user: bob.body.id, balanceAfter: 1002.5 })
    await expectAuditPasses(server)
  })

  it('no sign-up may take an address at the system domain', async () => {
    for (const email of [HOUSE_EMAIL, 'HOUSE@Meshwork.Invalid', 'ops@node.meshwork.invalid']) {
      const res = await register(email)
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ data: { email: { code: 'validation_reserved_email' } } })
    }
  })

  it('the house e-mail claimed first: the squatter is never the house and earns nothing', async () => {
    const squatter = await register('house@meshwork.local') // the house's address in older releases
    expect(squatter.status).toBe(200)
    const squatterId = squatter.body.id as string

    const { nodeId } = await ensureLocalNode(server.core)
    const house = await ensureHouseAccount(server.core)
    expect(house).not.toBe(squatterId)
    expect((await ensureLocalNode(server.core)).nodeId).toBe(nodeId) // idempotent
    const node = await server.core.database.db
      .selectFrom('nodes')
      .select('user')
      .where('id', '=', nodeId)
      .executeTakeFirstOrThrow()
    expect(node.user).toBe(house)
    const owned = await server.core.database.db
      .selectFrom('nodes')
      .select('id')
      .where('user', '=', squatterId)
      .execute()
    expect(owned).toEqual([])

    // The built-in node (here a fake agent holding its credential) answers a chat: the house earns.
    const agent = new FakeNode(
      server,
      nodeId,
      await issueCredential(server.core.database.db, nodeId),
    )
    await agent.connect()
    try {
      const stories = await modelId(server)
      const user = server.client()
      const email = `chatter${Date.now().toString(36)}@example.com`
      await user.collection('users').create({ email, password, passwordConfirm: password })
      await user.collection('users').authWithPassword(email, password)
      await waitUntil(
        async () => (await user.collection('available_models').getOne(stories)).node_count > 0,
        10_000,
        'the local node',
      )
      const conversation = await user
        .collection('conversations')
        .create({ title: 'New Chat', user: user.authStore.record!.id })
      const sent = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: stories, prompt: 'Hello' },
        user.authStore.token,
      )
      const id = sent.body.request_id as string
      const done = await waitUntil(
        async () => {
          const r = await user.collection('requests').getOne(id)
          return r.status === 'completed' && r
        },
        10_000,
        'the answer',
      )
      expect(await balanceOf(server, house)).toMatchObject({ total_earned: done.cost })
      expect(await balanceOf(server, squatterId)).toMatchObject({ balance: 1000, total_earned: 0 })
      const squatterLogin = await login('house@meshwork.local')
      expect((squatterLogin.body.record as { id: string }).id).toBe(squatterId)
      await expectAuditPasses(server)
    } finally {
      agent.kill()
    }
  })
})
