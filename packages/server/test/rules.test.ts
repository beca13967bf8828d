/**
 * Access rules from the outside: the owner, another signed-in user, and a guest, per collection.
 * The rule table is in docs/access-rules.md.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAsServer, modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'

const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e) => e.status as number,
  )

describe.each(dialects)('access rules [%s]', (dialect) => {
  let server: TestServer
  let alice: PocketBase
  let bob: PocketBase
  let guest: PocketBase
  let aliceId: string
  let model: string
  let aliceNode: string
  let aliceConv: string
  let aliceRequest: string
  let aliceNodeModel: string

  beforeAll(async () => {
    server = await startTestServer(dialect)
    alice = await signUp(server, 'alice')
    bob = await signUp(server, 'bob')
    guest = server.client()
    aliceId = alice.authStore.record!.id
    model = await modelId(server)
    aliceNode = (
      await createAsServer(server, 'nodes', {
        user: aliceId,
        device_name: 'alice-box',
        status: 'online',
      })
    ).id as string
    aliceConv = (await alice.collection('conversations').create({ model, title: 'secret plans' }))
      .id
    aliceRequest = (
      await createAsServer(server, 'requests', {
        user: aliceId,
        conversation: aliceConv,
        model,
        prompt: 'my secret prompt',
        response: 'secret answer',
        status: 'completed',
        processing_time_ms: 42,
        node: aliceNode,
      })
    ).id as string
    aliceNodeModel = (
      await alice.collection('node_models').create({
        node: aliceNode,
        model,
        requested_download: true,
        requested_serving: false,
        is_downloaded: false,
        is_serving: false,
        tokens_per_second: 0,
      })
    ).id
    await createAsServer(server, 'node_jobs', {
      request: aliceRequest,
      node: aliceNode,
      status: 'acked',
    })
  })
  afterAll(() => server.stop())

  it('users: each sees only their own record; nobody reads others e-mails', async () => {
    expect((await alice.collection('users').getFullList()).map((u) => u.id)).toEqual([aliceId])
    expect(await statusOf(bob.collection('users').getOne(aliceId))).toBe(404)
    expect(await statusOf(guest.collection('users').getOne(aliceId))).toBe(404)
    expect(await guest.collection('users').getFullList()).toEqual([])
    expect(await bob.collection('users').getFullList({ filter: `email ~ "alice"` })).toEqual([])
    expect(await statusOf(bob.collection('users').update(aliceId, { name: 'pwned' }))).toBe(404)
    expect(await statusOf(bob.collection('users').delete(aliceId))).toBe(404)
  })

  it('balances and transactions: owner only, and nobody writes them through the API', async () => {
    const own = await alice.collection('user_balances').getFullList()
    expect(own).toHaveLength(1)
    expect(
      await bob.collection('user_balances').getFullList({ filter: `user = "${aliceId}"` }),
    ).toEqual([])
    expect(await guest.collection('user_balances').getFullList()).toEqual([])
    expect(await statusOf(bob.collection('user_balances').getOne(own[0].id))).toBe(404)
    expect(
      await statusOf(alice.collection('user_balances').update(own[0].id, { balance: 1e9 })),
    ).toBe(403)
    expect(
      await statusOf(alice.collection('user_balances').create({ user: aliceId, balance: 1e9 })),
    ).toBe(403)
    expect(
      await statusOf(
        alice
          .collection('user_credit_txs')
          .create({ user: aliceId, type: 'credit_admin', amount: 1e9 }),
      ),
    ).toBe(403)
    const tx = (await alice.collection('user_credit_txs').getFullList())[0]
    expect(await statusOf(alice.collection('user_credit_txs').delete(tx.id))).toBe(403)
    expect(
      await bob.collection('user_credit_txs').getFullList({ filter: `user = "${aliceId}"` }),
    ).toEqual([])
  })

  it('conversations: owner only for every action; a user cannot create one for somebody else', async () => {
    expect(await bob.collection('conversations').getFullList()).toEqual([])
    expect(await statusOf(bob.collection('conversations').getOne(aliceConv))).toBe(404)
    expect(await statusOf(bob.collection('conversations').update(aliceConv, { title: 'x' }))).toBe(
      404,
    )
    expect(await statusOf(bob.collection('conversations').delete(aliceConv))).toBe(404)
    expect(await statusOf(guest.collection('conversations').create({ model, title: 'anon' }))).toBe(
      400,
    )
    expect(
      await statusOf(
        bob.collection('conversations').create({ user: aliceId, model, title: 'forged' }),
      ),
    ).toBe(400)
    // the owner field cannot be moved to another user
    await alice.collection('conversations').update(aliceConv, { user: bob.authStore.record!.id })
    expect((await alice.collection('conversations').getOne(aliceConv)).user).toBe(aliceId)
  })

  it('back-relation expand never reveals a private link to someone who does not own it', async () => {
    // node_jobs.node and node_jobs.request are owner-only: Bob sees jobs, not whose node ran them
    // or which request they served, so expanding from the other side must not tell him either.
    const asBob = await bob.collection('nodes').getOne(aliceNode, { expand: 'node_jobs_via_node' })
    expect(asBob.expand?.node_jobs_via_node ?? []).toEqual([])
    const requestAsBob = await bob
      .collection('requests')
      .getOne(aliceRequest, { expand: 'node_jobs_via_request' })
    expect(requestAsBob.expand?.node_jobs_via_request ?? []).toEqual([])
    const listed = await bob.collection('nodes').getFullList({ expand: 'node_jobs_via_node' })
    for (const node of listed) expect(node.expand?.node_jobs_via_node ?? []).toEqual([])
    // Nor can he find the link with a filter.
    expect(
      await bob.collection('nodes').getFullList({ filter: `node_jobs_via_node.id != ""` }),
    ).toEqual([])
    // The owner sees her own links.
    const asAlice = await alice
      .collection('nodes')
      .getOne(aliceNode, { expand: 'node_jobs_via_node' })
    expect(asAlice.expand?.node_jobs_via_node).toHaveLength(1)
    expect(
      (await alice.collection('requests').getOne(aliceRequest, { expand: 'node_jobs_via_request' }))
        .expand?.node_jobs_via_request,
    ).toHaveLength(1)
  })

  it('requests: others see status and timing, never prompts, responses or owners', async () => {
    const own = await alice.collection('requests').getOne(aliceRequest)
    expect(own).toMatchObject({
      prompt: 'my secret prompt',
      response: 'secret answer',
      user: aliceId,
    })
    const seen = await bob.collection('requests').getOne(aliceRequest)
    expect(seen).toMatchObject({ status: 'completed', processing_time_ms: 42 })
    for (const hidden of ['prompt', 'response', 'user', 'conversation', 'error_message'])
      expect(seen).not.toHaveProperty(hidden)
    // filtering or sorting on private fields cannot reveal them
    expect(await bob.collection('requests').getFullList({ filter: 'prompt ~ "secret"' })).toEqual(
      [],
    )
    expect(await bob.collection('requests').getFullList({ filter: `user = "${aliceId}"` })).toEqual(
      [],
    )
    expect(
      await alice.collection('requests').getFullList({ filter: 'prompt ~ "secret"' }),
    ).toHaveLength(1)
    expect(await guest.collection('requests').getFullList()).toEqual([])
    expect(await statusOf(alice.collection('requests').create({ prompt: 'direct' }))).toBe(403)
    expect(
      await statusOf(alice.collection('requests').update(aliceRequest, { status: 'completed' })),
    ).toBe(403)
    // expanding a relation to a private conversation shows nothing for others
    const expanded = await bob
      .collection('requests')
      .getOne(aliceRequest, { expand: 'conversation,model' })
    expect(expanded.expand?.conversation).toBeUndefined()
    expect(expanded.expand?.model.name).toBe('stories260K')
  })

  it('nodes: public columns for signed-in users; only the owner edits or deletes', async () => {
    const seen = await bob.collection('nodes').getOne(aliceNode)
    expect(seen).toMatchObject({ device_name: 'alice-box', status: 'online' })
    expect(await guest.collection('nodes').getFullList()).toEqual([])
    expect(
      await statusOf(bob.collection('nodes').update(aliceNode, { device_name: 'mine now' })),
    ).toBe(404)
    expect(await statusOf(bob.collection('nodes').delete(aliceNode))).toBe(404)
    expect(await statusOf(bob.collection('nodes').create({ device_name: 'fake' }))).toBe(403)
    const renamed = await alice.collection('nodes').update(aliceNode, {
      device_name: 'alice-laptop',
      status: 'offline',
      total_requests: 999,
      user: bob.authStore.record!.id,
    })
    // server-managed columns are ignored in client bodies
    expect(renamed).toMatchObject({
      device_name: 'alice-laptop',
      status: 'online',
      total_requests: 0,
      user: aliceId,
    })
  })

  it('nodes: activation requires at least one serving model', async () => {
    await createAsServer(server, 'nodes', {
      user: aliceId,
      device_name: 'idle-box',
      is_active: false,
    }).then(async (idle) => {
      const err = await alice
        .collection('nodes')
        .update(idle.id as string, { is_active: true })
        .catch((e) => e)
      expect(err.status).toBe(400)
      expect(err.response.data.is_active.message).toBe(
        'Node activation requires at least one serving model.',
      )
      const nm = await alice
        .collection('node_models')
        .create({ node: idle.id, model, requested_download: true })
      await server.core.database.db
        .updateTable('node_models')
        .set({ is_serving: 1 })
        .where('id', '=', nm.id)
        .execute()
      expect(
        (await alice.collection('nodes').update(idle.id as string, { is_active: true })).is_active,
      ).toBe(true)
      // switching off is always allowed
      expect(
        (await alice.collection('nodes').update(idle.id as string, { is_active: false })).is_active,
      ).toBe(false)
      await alice.collection('nodes').delete(idle.id as string)
    })
  })

  it('node_models: owner manages; others see only serving entries and never the private columns', async () => {
    expect(await bob.collection('node_models').getFullList()).toEqual([])
    expect(await statusOf(bob.collection('node_models').getOne(aliceNodeModel))).toBe(404)
    expect(
      await statusOf(
        bob.collection('node_models').update(aliceNodeModel, { requested_serving: true }),
      ),
    ).toBe(404)
    expect(await statusOf(bob.collection('node_models').delete(aliceNodeModel))).toBe(404)
    expect(
      await statusOf(
        bob.collection('node_models').create({
          node: aliceNode,
          model: await modelId(server, 'llama-2-tiny-random'),
          requested_download: true,
        }),
      ),
    ).toBe(400)
    const own = await alice
      .collection('node_models')
      .update(aliceNodeModel, { requested_serving: true, is_serving: true })
    expect(own).toMatchObject({ requested_serving: true, is_serving: false })
    await server.core.database.db
      .updateTable('node_models')
      .set({ is_serving: 1 })
      .where('id', '=', aliceNodeModel)
      .execute()
    const visible = await bob
      .collection('node_models')
      .getFullList({ filter: `node = "${aliceNode}" && is_serving = true`, expand: 'model' })
    expect(visible).toHaveLength(1)
    expect(visible[0].expand?.model.name).toBe('stories260K')
    expect(visible[0]).not.toHaveProperty('requested_download')
    expect(visible[0]).not.toHaveProperty('error_message')
  })

  it('node_jobs: status and created for everyone signed in, request and node only for the owner', async () => {
    const [job] = await bob.collection('node_jobs').getFullList()
    expect(job.status).toBe('acked')
    expect(job.created).toBeTruthy()
    expect(job).not.toHaveProperty('request')
    expect(job).not.toHaveProperty('node')
    const [ownJob] = await alice.collection('node_jobs').getFullList()
    expect(ownJob.request).toBe(aliceRequest)
    expect(await guest.collection('node_jobs').getFullList()).toEqual([])
    expect(await statusOf(alice.collection('node_jobs').create({ status: 'pending' }))).toBe(403)
  })

  it('catalogue, available models and config: readable when signed in, read-only for everybody', async () => {
    expect(
      (
        await bob
          .collection('models')
          .getFullList({ filter: 'is_active = true', sort: 'sort_order' })
      ).length,
    ).toBe(7)
    expect(await guest.collection('models').getFullList()).toEqual([])
    expect(await statusOf(bob.collection('models').create({ name: 'evil' }))).toBe(403)
    expect(await statusOf(bob.collection('models').update(model, { credit_multiplier: 0 }))).toBe(
      403,
    )
    expect(
      await statusOf(
        bob.collection('config').update('meshworkconfig1', { default_temperature: 2 }),
      ),
    ).toBe(403)
    expect(await guest.collection('config').getFullList()).toEqual([])
  })
})
