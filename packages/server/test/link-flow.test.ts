import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, expectApiError, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { nodeAuthorizationHeader } from '@meshwork/protocol'
import { FakeNode, linkNode, postJson, serveModel, waitUntil } from './support/network.ts'

describe.each(dialects)('[%s] device link flow and node gateway', (dialect) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      {},
      { network: { waitFlowTimeoutMs: 300, linkFlowTtlMs: 60_000, heartbeatTimeoutMs: 1000 } },
    )
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('approves: creates the node for the signed-in user and hands the credential out once', async () => {
    const owner = await signUp(server, 'owner')
    const start = await postJson(server, '/api/auth/start-flow', { device_name: 'Kitchen PC' })
    expect(start.status).toBe(200)
    const flow = start.body as { state_token: string; device_secret: string; approve_url: string }
    expect(flow.approve_url).toContain(
      `/auth/approve-node?token=${flow.state_token}&device=Kitchen+PC`,
    )

    const pending = await postJson(server, '/api/auth/wait-flow', flow)
    expect(pending.body).toEqual({ status: 'pending' })

    // user_info is ignored: the token decides whose node it is.
    const approve = await postJson(
      server,
      '/api/auth/complete-flow',
      { state_token: flow.state_token, user_info: { id: 'someoneelse' } },
      owner.authStore.token,
    )
    expect(approve.status).toBe(200)
    const answer = await postJson(server, '/api/auth/wait-flow', flow)
    expect(answer.body.status).toBe('approved')
    const node = await owner.collection('nodes').getOne(answer.body.node_id as string)
    expect(node.user).toBe(owner.authStore.record!.id)
    expect(node.device_name).toBe('Kitchen PC')
    // The secret is stored only as a hash.
    const stored = await server.core.database.db
      .selectFrom('_node_credentials')
      .selectAll()
      .where('node', '=', node.id)
      .execute()
    expect(stored).toHaveLength(1)
    expect(stored[0].secret_hash).not.toContain(answer.body.credential as string)

    const again = await postJson(server, '/api/auth/wait-flow', flow)
    expect(again.status).toBe(400)
    const reused = await postJson(
      server,
      '/api/auth/complete-flow',
      { state_token: flow.state_token, user_info: {} },
      owner.authStore.token,
    )
    expect(reused.status).toBe(400)
  })

  it("tells the approve page the device name the node sent, not the URL's, to signed-in users only", async () => {
    const owner = await signUp(server, 'labeller')
    const start = await postJson(server, '/api/auth/start-flow', { device_name: 'Lab box' })
    const token = start.body.state_token as string
    // The approve URL still carries `device` (the node prints it); the page no longer trusts it.
    expect(new URL(String(start.body.approve_url)).searchParams.get('device')).toBe('Lab box')
    const info = await postJson(
      server,
      '/api/auth/flow-info',
      { state_token: token },
      owner.authStore.token,
    )
    expect(info.status).toBe(200)
    expect(info.body).toEqual({ device_name: 'Lab box', expires_at: start.body.expires_at })
    expect((await postJson(server, '/api/auth/flow-info', { state_token: token })).status).toBe(401)
    const unknown = await postJson(
      server,
      '/api/auth/flow-info',
      { state_token: 'nope' },
      owner.authStore.token,
    )
    expect(unknown.body).toEqual({
      status: 400,
      message: 'Invalid or expired authorization token.',
      data: {},
    })
    const missing = await postJson(server, '/api/auth/flow-info', {}, owner.authStore.token)
    expect(missing.body.message).toBe('Missing authorization token')
    // Once decided, the flow is no longer described.
    await postJson(
      server,
      '/api/auth/complete-flow',
      { state_token: token, status: 'failed', error: 'User denied authorization' },
      owner.authStore.token,
    )
    expect(
      (await postJson(server, '/api/auth/flow-info', { state_token: token }, owner.authStore.token))
        .status,
    ).toBe(400)
  })

  it('denies with the spec body, and the node hears the denial', async () => {
    const owner = await signUp(server, 'denier')
    const flow = (await postJson(server, '/api/auth/start-flow', { device_name: 'Laptop' })).body
    const deny = await postJson(
      server,
      '/api/auth/complete-flow',
      { state_token: flow.state_token, status: 'failed', error: 'User denied authorization' },
      owner.authStore.token,
    )
    expect(deny.status).toBe(200)
    const answer = await postJson(server, '/api/auth/wait-flow', flow)
    expect(answer.status).toBe(400)
    expect(answer.body.message).toBe('User denied authorization')
    const nodes = await owner
      .collection('nodes')
      .getFullList({ filter: `user = "${owner.authStore.record!.id}"` })
    expect(nodes).toHaveLength(0)
  })

  it('refuses missing, unknown and expired tokens, a wrong device secret, and guests', async () => {
    const owner = await signUp(server, 'tokens')
    const missing = await postJson(
      server,
      '/api/auth/complete-flow',
      { user_info: {} },
      owner.authStore.token,
    )
    expect(missing).toMatchObject({ status: 400, body: { message: 'Missing authorization token' } })
    const unknown = await postJson(
      server,
      '/api/auth/complete-flow',
      { state_token: 'nope', user_info: {} },
      owner.authStore.token,
    )
    expect(unknown.status).toBe(400)
    expect(unknown.body.message).toMatch(/invalid or expired/i)

    const flow = (await postJson(server, '/api/auth/start-flow', { device_name: 'Box' })).body
    const guest = await postJson(server, '/api/auth/complete-flow', {
      state_token: flow.state_token,
      user_info: {},
    })
    expect(guest.status).toBe(401)
    const wrongSecret = await postJson(server, '/api/auth/wait-flow', {
      state_token: flow.state_token,
      device_secret: 'wrong',
    })
    expect(wrongSecret.status).toBe(400)

    await server.core.database.db
      .updateTable('_link_flows')
      .set({ expires_at: '2020-01-01 00:00:00.000Z' })
      .where('state_token', '=', flow.state_token)
      .execute()
    const expired = await postJson(
      server,
      '/api/auth/complete-flow',
      { state_token: flow.state_token, user_info: {} },
      owner.authStore.token,
    )
    expect(expired.status).toBe(400)
    expect(expired.body.message).toMatch(/expired/i)
    const waitExpired = await postJson(server, '/api/auth/wait-flow', flow)
    expect(waitExpired.status).toBe(410)
  })

  it("gives a node's credential no more than a guest's access to the HTTP API", async () => {
    const owner = await signUp(server, 'credowner')
    const { nodeId, credential } = await linkNode(server, owner)
    await owner.collection('conversations').create({ title: 'Private' })
    const asNode = async (method: string, path: string, body?: unknown) => {
      const results: number[] = []
      for (const authorization of [
        nodeAuthorizationHeader(nodeId, credential),
        `${nodeId}.${credential}`,
      ]) {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { authorization, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        results.push(res.status)
        if (res.status === 200 && method === 'GET') {
          const list = await res.json()
          expect(list.items ?? [list], path).toEqual([])
        }
      }
      return results
    }
    for (const collection of [
      'conversations',
      'requests',
      'user_balances',
      'user_credit_txs',
      'node_models',
      'users',
    ]) {
      expect(await asNode('GET', `/api/collections/${collection}/records`)).toEqual([200, 200])
    }
    expect(
      await asNode('PATCH', `/api/collections/nodes/records/${nodeId}`, { is_active: false }),
    ).toEqual([404, 404])
    expect(await asNode('DELETE', `/api/collections/nodes/records/${nodeId}`)).toEqual([404, 404])
    expect(await asNode('POST', '/api/collections/conversations/records', { title: 'x' })).toEqual([
      400, 400,
    ])
    expect(
      await asNode('POST', '/api/chat/send', { conversation_id: 'x', model_id: 'y', prompt: 'hi' }),
    ).toEqual([401, 401])
    expect(await asNode('POST', '/api/collections/users/auth-refresh')).toEqual([401, 401])
    expect((await owner.collection('nodes').getOne(nodeId)).id).toBe(nodeId)
  })

  it('refuses a wrong or revoked credential on the WebSocket and marks a connected node online', async () => {
    const owner = await signUp(server, 'ws')
    const { nodeId, credential } = await linkNode(server, owner)
    expect(await new FakeNode(server, nodeId, 'wrong-secret').connect()).toBe(401)
    expect(await new FakeNode(server, 'aaaaaaaaaaaaaaa', credential).connect()).toBe(401)
    expect(await new FakeNode(server, nodeId, credential).connect('Bearer nonsense')).toBe(401)

    const good = new FakeNode(server, nodeId, credential)
    expect(await good.connect()).toBe('open')
    await waitUntil(
      async () => (await owner.collection('nodes').getOne(nodeId)).status === 'online',
      5000,
      'online',
    )
    good.kill()
    await waitUntil(
      async () => (await owner.collection('nodes').getOne(nodeId)).status === 'offline',
      5000,
      'offline',
    )

    await server.core.database.db
      .updateTable('_node_credentials')
      .set({ revoked: 1 })
      .where('node', '=', nodeId)
      .execute()
    expect(await new FakeNode(server, nodeId, credential).connect()).toBe(401)
  })

  it('pushes node_models changes to the node, writes its reports, and keeps other users out', async () => {
    const owner = await signUp(server, 'models')
    const other = await signUp(server, 'intruder')
    const { nodeId, credential } = await linkNode(server, owner)
    const node = new FakeNode(server, nodeId, credential)
    await node.connect()
    const model = await modelId(server)
    const nmId = await serveModel(server, owner, nodeId, model)
    const desired = node.frames.filter((f) => f.type === 'desired_state').at(-1)
    expect(desired).toMatchObject({
      node_models: [
        { id: nmId, requested_serving: true, model: { id: model, file_name: 'stories260K.gguf' } },
      ],
    })
    const record = await owner.collection('node_models').getOne(nmId)
    expect(record).toMatchObject({
      is_downloaded: true,
      is_serving: true,
      download_progress: '100',
      tokens_per_second: 100,
    })

    await expect(
      other.collection('node_models').update(nmId, { requested_serving: false }),
    ).rejects.toSatisfy((e) => expectApiError(e).status === 404)
    await expect(
      other.collection('node_models').create({
        node: nodeId,
        model: await modelId(server, 'llama-2-tiny-random'),
        requested_download: true,
      }),
    ).rejects.toSatisfy((e) => expectApiError(e).status === 400)
    // A node cannot write records: its own reports for another node's model are ignored.
    node.send({
      type: 'model_status',
      node_model_id: 'xxxxxxxxxxxxxxx',
      is_downloaded: true,
      download_progress: 1,
      is_serving: true,
      tokens_per_second: 1,
      error_message: '',
    })

    await owner.collection('node_models').update(nmId, { requested_serving: false })
    await waitUntil(
      () =>
        node.frames.some(
          (f) => f.type === 'desired_state' && f.node_models[0]?.requested_serving === false,
        ),
      5000,
      'desired push',
    )
    await waitUntil(
      async () => (await owner.collection('node_models').getOne(nmId)).is_serving === false,
      5000,
      'not serving',
    )
    node.kill()
  })

  it('closes the socket and revokes the credential of a deleted node', async () => {
    const owner = await signUp(server, 'deleter')
    const { nodeId, credential } = await linkNode(server, owner)
    const node = new FakeNode(server, nodeId, credential)
    await node.connect()
    const closed = new Promise<void>((r) => node.ws.once('close', () => r()))
    await owner.collection('nodes').delete(nodeId)
    await closed
    await waitUntil(
      async () => {
        const rows = await server.core.database.db
          .selectFrom('_node_credentials')
          .select('revoked')
          .where('node', '=', nodeId)
          .execute()
        return rows.every((r) => Number(r.revoked) === 1)
      },
      5000,
      'revoked',
    )
    expect(await new FakeNode(server, nodeId, credential).connect()).toBe(401)
  })

  it("writes a beating node's row when its status changes, not at every heartbeat", async () => {
    const owner = await signUp(server, 'beating')
    const { nodeId, credential } = await linkNode(server, owner)
    const node = new FakeNode(server, nodeId, credential) // beats every 100 ms
    await node.connect()
    const row = () => owner.collection('nodes').getOne(nodeId)
    await waitUntil(async () => (await row()).status === 'online', 5000, 'online')
    const seen = (await row()).last_seen
    await new Promise((r) => setTimeout(r, 700))
    // Seven heartbeats later: still online, and the row was not written again.
    expect(await row()).toMatchObject({ status: 'online', last_seen: seen })
    // A heartbeat that changes the status is written at once.
    node.silence()
    node.send({ type: 'heartbeat', busy_jobs: 1, max_jobs: 1 })
    await waitUntil(async () => (await row()).status === 'busy', 5000, 'busy')
    expect((await row()).last_seen > seen).toBe(true)
    node.kill()
  })

  it('takes a node offline when its heartbeats stop', async () => {
    const owner = await signUp(server, 'silent')
    const { nodeId, credential } = await linkNode(server, owner)
    const node = new FakeNode(server, nodeId, credential)
    await node.connect()
    await waitUntil(
      async () => (await owner.collection('nodes').getOne(nodeId)).status === 'online',
      5000,
      'online',
    )
    await new Promise((r) => setTimeout(r, 1200))
    expect((await owner.collection('nodes').getOne(nodeId)).status).toBe('online')
    const closed = new Promise<void>((r) => node.ws.once('close', () => r()))
    node.silence()
    await closed
    await waitUntil(
      async () => (await owner.collection('nodes').getOne(nodeId)).status === 'offline',
      5000,
      'offline',
    )
  })
})

describe('starting link flows', () => {
  it('is limited per address, with 429 once the window is used up', async () => {
    const server = await startTestServer(
      'sqlite',
      {},
      { network: { startFlowLimit: { limit: 3, windowMs: 60_000 } } },
    )
    try {
      const statuses: number[] = []
      for (let i = 0; i < 4; i++)
        statuses.push(
          (await postJson(server, '/api/auth/start-flow', { device_name: `d${i}` })).status,
        )
      expect(statuses).toEqual([200, 200, 200, 429])
      const refused = await postJson(server, '/api/auth/start-flow', { device_name: 'again' })
      expect(refused.body).toEqual({ status: 429, message: 'Too Many Requests.', data: {} })
      const stored = await server.core.database.db.selectFrom('_link_flows').select('id').execute()
      expect(stored).toHaveLength(3)
    } finally {
      await server.stop()
    }
  })

  it('takes its limit from the configuration (MESHWORK_LINK_FLOW_LIMIT)', async () => {
    const server = await startTestServer('sqlite', { linkFlowLimit: 2 })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 3; i++)
        statuses.push(
          (await postJson(server, '/api/auth/start-flow', { device_name: `d${i}` })).status,
        )
      expect(statuses).toEqual([200, 200, 429])
    } finally {
      await server.stop()
    }
  })
})
