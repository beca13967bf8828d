/**
 * Every records call of the product spec's section 7, made with the official SDK exactly as the
 * web app makes it, against the real server.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyEntry } from '../src/core/ledger/ledger-entry.ts'
import { withUnitOfWork } from '../src/core/records/unit-of-work.ts'
import { toUnits } from '../src/core/ledger/credits.ts'
import { createAsServer, modelId, updateAsServer } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'

describe.each(dialects)('spec section 7 calls [%s]', (dialect) => {
  let server: TestServer
  let pb: PocketBase
  let userId: string
  let model: string
  let node: string
  let conversation: string
  let request: string

  beforeAll(async () => {
    server = await startTestServer(dialect)
    pb = await signUp(server, 'spec')
    userId = pb.authStore.record!.id
    model = await modelId(server)
    node = (
      await createAsServer(server, 'nodes', {
        user: userId,
        device_name: 'spec-box',
        status: 'online',
      })
    ).id as string
    conversation = (await pb.collection('conversations').create({ model, title: 'New Chat' })).id
    request = (
      await createAsServer(server, 'requests', {
        user: userId,
        conversation,
        model,
        prompt: 'hi',
        response: 'hello',
        status: 'completed',
        tokens_input: 1,
        tokens_output: 2,
        node,
      })
    ).id as string
    await withUnitOfWork(server.core, async (uow) => {
      await applyEntry(uow, {
        user: userId,
        type: 'debit_inference_request',
        amount: toUnits(3),
        description: 'Spent on inference request',
        request,
      })
    })
  })
  afterAll(() => server.stop())

  it('Balance: page 1, perPage 1, filtered by user', async () => {
    const res = await pb.collection('user_balances').getList(1, 1, { filter: `user = "${userId}"` })
    expect(res.items[0]).toMatchObject({
      user: userId,
      balance: 997,
      total_spent: 3,
      total_earned: 0,
    })
  })

  it('Transactions: perPage 50, sort -created, filter by user, expand request.model', async () => {
    const res = await pb
      .collection('user_credit_txs')
      .getList(1, 50, { sort: '-created', filter: `user = "${userId}"`, expand: 'request.model' })
    expect(res.totalPages).toBe(1)
    expect(res.items.map((t) => t.type)).toEqual(['debit_inference_request', 'credit_admin'])
    expect(res.items[0].expand?.request.expand?.model.name).toBe('stories260K')
  })

  it('Conversations: list sorted -last_message_at, 50 per page, filtered to the user; PATCH title or model', async () => {
    const list = await pb
      .collection('conversations')
      .getList(1, 50, { sort: '-last_message_at', filter: `user = "${userId}"` })
    expect(list.items.map((c) => c.id)).toContain(conversation)
    const other = await modelId(server, 'llama-2-tiny-random')
    const updated = await pb.collection('conversations').update(conversation, { model: other })
    expect(updated.model).toBe(other)
    expect(
      (await pb.collection('conversations').update(conversation, { title: 'Renamed Chat' })).title,
    ).toBe('Renamed Chat')
  })

  it('Conversation history: requests sorted by created, filtered by conversation and user, 50 items', async () => {
    const res = await pb.collection('requests').getList(1, 50, {
      sort: 'created',
      filter: `conversation = "${conversation}" && user = "${userId}"`,
    })
    expect(res.items.map((r) => r.id)).toEqual([request])
    expect(res.items[0]).toMatchObject({
      response: 'hello',
      status: 'completed',
      tokens_input: 1,
      tokens_output: 2,
    })
  })

  it('Live request updates: subscription to the request record', async () => {
    const got: string[] = []
    await pb
      .collection('requests')
      .subscribe(request, (e) => got.push(`${e.action}:${e.record.status}`))
    await updateAsServer(server, 'requests', request, {
      status: 'failed',
      error_message: 'x',
      can_retry: true,
    })
    const end = Date.now() + 2000
    while (got.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
    expect(got).toEqual(['update:failed'])
    await pb.realtime.unsubscribe()
  })

  it('Config: page 1, size 1', async () => {
    const res = await pb.collection('config').getList(1, 1)
    expect(res.items[0].default_temperature).toBe(0.7)
  })

  it('Model availability: sorted by sort_order then name, the full list paged 500 at a time', async () => {
    const all = await pb
      .collection('available_models')
      .getFullList(500, { sort: 'sort_order,name' })
    expect(all.map((m) => m.name)).toEqual([
      'stories260K',
      'qwen2.5-0.5b-instruct',
      'llama-3.2-1b-instruct',
      'qwen2.5-1.5b-instruct',
      'llama-3.2-3b-instruct',
      'qwen2.5-7b-instruct',
      'llama-2-tiny-random',
    ])
  })

  it('Model catalogue: is_active = true sorted by sort_order', async () => {
    const all = await pb
      .collection('models')
      .getFullList({ filter: 'is_active = true', sort: 'sort_order' })
    // The chat models' sizes are pinned from the hub when a node first asks for them.
    expect(all.map((m) => m.file_size_bytes)).toEqual([1185376, 0, 0, 0, 0, 0, 1750560])
  })

  it('Node models: create, filter by node (expand model), optionally is_serving, PATCH, DELETE', async () => {
    const created = await pb.collection('node_models').create({
      node,
      model,
      requested_download: true,
      requested_serving: false,
      is_downloaded: false,
      is_serving: false,
      tokens_per_second: 0,
    })
    const list = await pb
      .collection('node_models')
      .getFullList({ filter: `node = "${node}"`, expand: 'model' })
    expect(list[0].expand?.model.display_name).toBe('Stories 260K')
    expect(
      await pb
        .collection('node_models')
        .getFullList({ filter: `node = "${node}" && is_serving = true` }),
    ).toEqual([])
    expect(
      (await pb.collection('node_models').update(created.id, { requested_download: false }))
        .requested_download,
    ).toBe(false)
    expect(
      (
        await pb
          .collection('node_models')
          .update(created.id, { requested_serving: false, is_serving: false })
      ).requested_serving,
    ).toBe(false)
    expect(await pb.collection('node_models').delete(created.id)).toBe(true)
  })

  it('Nodes: own list filtered by user, PATCH device_name or is_active, DELETE', async () => {
    const list = await pb.collection('nodes').getFullList({ filter: `user = "${userId}"` })
    expect(list.map((n) => n.device_name)).toEqual(['spec-box'])
    expect(
      (await pb.collection('nodes').update(node, { device_name: 'renamed' })).device_name,
    ).toBe('renamed')
    const spare = await createAsServer(server, 'nodes', { user: userId, device_name: 'spare' })
    expect(await pb.collection('nodes').delete(spare.id as string)).toBe(true)
  })

  it('Network screen data: nodes, node_jobs, requests with no filter', async () => {
    await createAsServer(server, 'node_jobs', { request, node, status: 'pending' })
    const [nodes, jobs, requests] = await Promise.all([
      pb.collection('nodes').getFullList(),
      pb.collection('node_jobs').getFullList(),
      pb.collection('requests').getFullList(),
    ])
    expect(nodes.length).toBeGreaterThan(0)
    expect(jobs[0]).toMatchObject({ status: 'pending' })
    expect(requests.length).toBeGreaterThan(0)
  })
})
