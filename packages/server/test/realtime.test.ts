import type PocketBase from 'pocketbase'
import type { RecordSubscription } from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAsServer, modelId, updateAsServer } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'

type Event = RecordSubscription<Record<string, unknown>>

function collector() {
  const events: Event[] = []
  return {
    events,
    push: (e: Event) => events.push(e),
    async waitFor(n: number, ms = 3000) {
      const end = Date.now() + ms
      while (events.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
      return events
    },
  }
}

const settle = () => new Promise((r) => setTimeout(r, 150))

describe.each(dialects)('realtime [%s]', (dialect) => {
  let server: TestServer
  let alice: PocketBase
  let bob: PocketBase
  let model: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    alice = await signUp(server, 'rt-alice')
    bob = await signUp(server, 'rt-bob')
    model = await modelId(server)
  })
  afterAll(async () => {
    await alice.realtime.unsubscribe()
    await bob.realtime.unsubscribe()
    await server.stop()
  })

  it('sends PB_CONNECT with the client id in the SSE id field', async () => {
    const res = await fetch(`${server.url}/api/realtime`)
    const reader = res.body!.getReader()
    const { value } = await reader.read()
    const text = new TextDecoder().decode(value)
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    expect(text).toMatch(/^id:([A-Za-z0-9]{40})\nevent:PB_CONNECT\ndata:\{"clientId":"\1"\}\n\n/)
    await reader.cancel()
  })

  it('delivers create, update and delete of own records, and nothing of others', async () => {
    const mine = collector()
    const theirs = collector()
    await alice.collection('conversations').subscribe('*', mine.push)
    await bob.collection('conversations').subscribe('*', theirs.push)
    const conv = await alice.collection('conversations').create({ model, title: 'live' })
    await alice.collection('conversations').update(conv.id, { title: 'live 2' })
    await alice.collection('conversations').delete(conv.id)
    const events = await mine.waitFor(3)
    expect(events.map((e) => e.action)).toEqual(['create', 'update', 'delete'])
    expect(events[1].record.title).toBe('live 2')
    await settle()
    expect(theirs.events).toEqual([])
    await alice.collection('conversations').unsubscribe('*')
    await bob.collection('conversations').unsubscribe('*')
  })

  it('checks record subscriptions against the view rule and applies filter options', async () => {
    const conv = await alice.collection('conversations').create({ model, title: 'watched' })
    const snoop = collector()
    const owner = collector()
    const filtered = collector()
    await bob.collection('conversations').subscribe(conv.id, snoop.push)
    await alice.collection('conversations').subscribe(conv.id, owner.push)
    await alice
      .collection('conversations')
      .subscribe('*', filtered.push, { filter: 'title = "match"' })
    await alice.collection('conversations').update(conv.id, { title: 'nomatch' })
    await alice.collection('conversations').update(conv.id, { title: 'match' })
    await owner.waitFor(2)
    await filtered.waitFor(1)
    await settle()
    expect(owner.events.map((e) => e.record.title)).toEqual(['nomatch', 'match'])
    expect(filtered.events.map((e) => e.record.title)).toEqual(['match'])
    expect(snoop.events).toEqual([])
    await alice.realtime.unsubscribe()
    await bob.realtime.unsubscribe()
  })

  it('hides private fields of others records in events and checks relation rules on delete', async () => {
    const aliceId = alice.authStore.record!.id
    const node = await createAsServer(server, 'nodes', {
      user: aliceId,
      device_name: 'rt-node',
      status: 'online',
    })
    const nm = await alice
      .collection('node_models')
      .create({ node: node.id, model, requested_download: true })
    const aliceEvents = collector()
    const bobEvents = collector()
    await alice.collection('node_models').subscribe('*', aliceEvents.push)
    await bob.collection('node_models').subscribe('*', bobEvents.push)
    await updateAsServer(server, 'node_models', nm.id as string, {
      is_serving: true,
      is_downloaded: true,
    })
    await alice.collection('node_models').delete(nm.id as string)
    const own = await aliceEvents.waitFor(2)
    const other = await bobEvents.waitFor(1)
    await settle()
    expect(own.map((e) => e.action)).toEqual(['update', 'delete'])
    expect(own[0].record.requested_download).toBe(true)
    // bob sees the serving entry (public), without the private columns, and not its deletion
    // (a deleted, no longer serving entry is checked against the rule on its last state: serving)
    expect(other[0].action).toBe('update')
    expect(other[0].record).not.toHaveProperty('requested_download')
    await alice.realtime.unsubscribe()
    await bob.realtime.unsubscribe()
  })

  it('never lets a subscription filter probe private fields of others', async () => {
    const aliceId = alice.authStore.record!.id
    const conv = await alice.collection('conversations').create({ model, title: 'private' })
    const probe = collector()
    const control = collector()
    await bob.collection('requests').subscribe('*', probe.push, { filter: 'prompt ~ "secret"' })
    await bob
      .collection('requests')
      .subscribe('*', control.push, { filter: 'status = "completed"' })
    await createAsServer(server, 'requests', {
      user: aliceId,
      conversation: conv.id,
      model,
      prompt: 'a secret prompt',
      status: 'completed',
    })
    await control.waitFor(1)
    await settle()
    expect(control.events).toHaveLength(1)
    expect(control.events[0].record).not.toHaveProperty('prompt')
    expect(probe.events).toEqual([])
    await bob.realtime.unsubscribe()
  })

  it('refuses subscriptions for unknown clients and identity changes on a stream', async () => {
    const unknown = await fetch(`${server.url}/api/realtime`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ clientId: 'nope', subscriptions: [] }),
    })
    expect(unknown.status).toBe(404)
    const res = await fetch(`${server.url}/api/realtime`)
    const reader = res.body!.getReader()
    const text = new TextDecoder().decode((await reader.read()).value)
    const clientId = /^id:(\w+)/.exec(text)![1]
    const post = (token: string) =>
      fetch(`${server.url}/api/realtime`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: token },
        body: JSON.stringify({ clientId, subscriptions: ['conversations/*'] }),
      })
    expect((await post('')).status).toBe(204)
    expect((await post(alice.authStore.token)).status).toBe(204)
    expect((await post(bob.authStore.token)).status).toBe(403)
    await reader.cancel()
  })

  it('lets the SDK reconnect and resubscribe after the server restarts', async () => {
    // A second server on a fixed port, so the SDK's EventSource can come back to the same address.
    const first = await startTestServer(dialect, { port: 0 })
    const port = first.port
    const pb = first.client()
    const email = `restart${Date.now()}@example.com`
    await pb
      .collection('users')
      .create({ email, password: 'password123', passwordConfirm: 'password123' })
    await pb.collection('users').authWithPassword(email, 'password123')
    const events = collector()
    let connects = 0
    await pb.realtime.subscribe('PB_CONNECT', () => connects++)
    await pb.collection('conversations').subscribe('*', events.push)
    expect(connects).toBe(1)
    // keep the database: restart on the same data dir / schema
    await first.close()
    const second = await startTestServer(dialect, {
      port,
      dataDir: first.core.config.dataDir,
      databaseSchema: first.core.config.databaseSchema,
    })
    const end = Date.now() + 8000
    while (connects < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 50))
    expect(connects).toBe(2)
    await pb.collection('conversations').create({ model, title: 'after restart' })
    await events.waitFor(1)
    expect(events.events[0]?.record.title).toBe('after restart')
    await pb.realtime.unsubscribe()
    await second.stop()
  }, 20_000)
})
