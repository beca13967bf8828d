import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'

/** Records the SQL of every statement the server runs until `restore` is called. */
function recordStatements(server: TestServer) {
  const statements: string[] = []
  const database = server.core.database
  const readNow = database.readNow?.bind(database)
  const executeQuery = database.db.executeQuery.bind(database.db)
  if (readNow) database.readNow = (query) => (statements.push(query.sql), readNow(query))
  database.db.executeQuery = ((query: { sql: string }) => (
    statements.push(query.sql),
    executeQuery(query as never)
  )) as typeof database.db.executeQuery
  return {
    statements,
    restore() {
      if (readNow) database.readNow = readNow
      database.db.executeQuery = executeQuery
    },
  }
}

describe.each(dialects)('records API [%s]', (dialect) => {
  let server: TestServer
  let pb: PocketBase
  let modelId: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    pb = await signUp(server, 'records')
    modelId = (await pb.collection('models').getFirstListItem('name = "stories260K"')).id
  })
  afterAll(() => server.stop())

  it('creates a conversation owned by the caller with the default title', async () => {
    const conv = await pb.collection('conversations').create({ model: modelId, title: 'New Chat' })
    expect(conv).toMatchObject({
      collectionName: 'conversations',
      collectionId: 'pbc_conversations',
      user: pb.authStore.record!.id,
      model: modelId,
      title: 'New Chat',
      message_count: 0,
    })
    const untitled = await pb.collection('conversations').create({ model: modelId })
    expect(untitled.title).toBe('New Chat')
  })

  it('views, updates and deletes a record (200, 200, 204 then 404)', async () => {
    const conv = await pb.collection('conversations').create({ model: modelId, title: 'Draft' })
    expect((await pb.collection('conversations').getOne(conv.id)).title).toBe('Draft')
    const updated = await pb.collection('conversations').update(conv.id, { title: 'Final' })
    expect(updated.title).toBe('Final')
    expect(updated.updated >= conv.updated).toBe(true)
    expect(await pb.collection('conversations').delete(conv.id)).toBe(true)
    const err = await pb
      .collection('conversations')
      .getOne(conv.id)
      .catch((e) => e)
    expect(err.status).toBe(404)
    expect(err.response).toEqual({
      data: {},
      message: "The requested resource wasn't found.",
      status: 404,
    })
  })

  it('answers a repeated read from its current rows, and a filter on @now from the current time', async () => {
    const user = await signUp(server, 'repeat')
    const uid = user.authStore.record!.id
    const list = () =>
      user
        .collection('conversations')
        .getList(1, 10, { filter: `user = "${uid}"`, sort: '-created' })
    const clock = () =>
      user
        .collection('conversations')
        .getList(1, 10, { filter: 'created <= @now', skipTotal: true })
    const first = await user.collection('conversations').create({ model: modelId, title: 'one' })
    expect((await list()).items.map((c) => c.title)).toEqual(['one'])
    expect((await clock()).items.map((c) => c.title)).toEqual(['one'])
    await new Promise((r) => setTimeout(r, 20))
    await user.collection('conversations').create({ model: modelId, title: 'two' })
    await new Promise((r) => setTimeout(r, 20))
    expect(await list()).toMatchObject({
      totalItems: 2,
      items: [{ title: 'two' }, { title: 'one' }],
    })
    // The same call a moment later sees the record created since: @now is read anew.
    expect((await clock()).items.map((c) => c.title).sort()).toEqual(['one', 'two'])
    expect((await user.collection('conversations').getOne(first.id)).title).toBe('one')
    await user.collection('conversations').update(first.id, { title: 'renamed' })
    expect((await user.collection('conversations').getOne(first.id)).title).toBe('renamed')
    // Another user's identical call reads their own (none), not the first user's.
    const other = await signUp(server, 'repeat-other')
    const theirs = await other.collection('conversations').getList(1, 10, {
      filter: 'created <= @now',
      skipTotal: true,
    })
    expect(theirs.items).toEqual([])
    const err = await other
      .collection('conversations')
      .getOne(first.id)
      .catch((e) => e)
    expect(err.status).toBe(404)
  })

  it('pages, sorts and filters the way the web app asks', async () => {
    const user = await signUp(server, 'pager')
    for (let i = 0; i < 7; i++)
      await user.collection('conversations').create({ model: modelId, title: `Chat ${i}` })
    const uid = user.authStore.record!.id
    const page = await user
      .collection('conversations')
      .getList(2, 3, { sort: '-title', filter: `user = "${uid}"` })
    expect(page).toMatchObject({ page: 2, perPage: 3, totalItems: 7, totalPages: 3 })
    expect(page.items.map((c) => c.title)).toEqual(['Chat 3', 'Chat 2', 'Chat 1'])
    const filtered = await user.collection('conversations').getList(1, 50, {
      filter: 'title ~ "chat 5" || (title = "Chat 1" && message_count = 0)',
      sort: 'title',
    })
    expect(filtered.items.map((c) => c.title)).toEqual(['Chat 1', 'Chat 5'])
    const all = await user.collection('conversations').getFullList({ batch: 2, sort: '-created' })
    expect(all).toHaveLength(7)
  })

  it('asks the database for a condition once when the filter repeats the rule, with the same answer', async () => {
    const other = await signUp(server, 'neighbour')
    await other.collection('conversations').create({ model: modelId, title: 'Not mine' })
    const me = pb.authStore.record!.id
    const { statements, restore } = recordStatements(server)
    try {
      // The sidebar's own filter is the list rule again (user = @request.auth.id).
      const mine = await pb
        .collection('conversations')
        .getList(1, 50, { filter: `user = "${me}"`, sort: '-created' })
      const ruleOnly = await pb.collection('conversations').getList(1, 50, { sort: '-created' })
      expect(mine.items.map((c) => c.id)).toEqual(ruleOnly.items.map((c) => c.id))
      expect(mine.totalItems).toBe(ruleOnly.totalItems)
      expect(mine.items.every((c) => c.user === me)).toBe(true)
      // Another user's id in the filter is a second condition, and finds nothing.
      const theirs = await pb
        .collection('conversations')
        .getList(1, 50, { filter: `user = "${other.authStore.record!.id}"` })
      expect(theirs.totalItems).toBe(0)
    } finally {
      restore()
    }
    const lists = statements.filter((s) => s.includes('SELECT r.*') && s.includes('conversations'))
    expect(lists).toHaveLength(3)
    const userConditions = (s: string) => s.split(/"r"\."user" = /).length - 1
    expect(lists.map(userConditions)).toEqual([1, 1, 2])
  })

  it('views each record by its own id, one after another (one compiled read for them all)', async () => {
    const mine = await signUp(server, 'viewer')
    const created = []
    for (const title of ['a', 'b', 'c'])
      created.push(await mine.collection('conversations').create({ model: modelId, title }))
    const theirs = await pb.collection('conversations').create({ model: modelId, title: 'No' })
    for (const conv of [...created, created[0]]) {
      const got = await mine.collection('conversations').getOne(conv.id)
      expect([got.id, got.title, got.user]).toEqual([conv.id, conv.title, conv.user])
    }
    await expect(mine.collection('conversations').getOne(theirs.id)).rejects.toMatchObject({
      status: 404,
    })
    expect((await pb.collection('conversations').getOne(theirs.id)).title).toBe('No')
  })

  it('counts the total only when a page cannot tell it: full, or empty past the first', async () => {
    const mine = await signUp(server, 'counter')
    for (const title of ['one', 'two', 'three'])
      await mine.collection('conversations').create({ model: modelId, title })
    const { statements, restore } = recordStatements(server)
    const counted = async (page: number, perPage: number) => {
      statements.length = 0
      const list = await mine.collection('conversations').getList(page, perPage)
      const counts = statements.filter((s) => s.includes('COUNT(*)')).length
      return { items: list.items.length, total: list.totalItems, pages: list.totalPages, counts }
    }
    try {
      // Short first page: it is the whole list.
      expect(await counted(1, 50)).toEqual({ items: 3, total: 3, pages: 1, counts: 0 })
      // A full page: there may be more.
      expect(await counted(1, 2)).toEqual({ items: 2, total: 3, pages: 2, counts: 1 })
      // A short page after full ones: offset + its rows.
      expect(await counted(2, 2)).toEqual({ items: 1, total: 3, pages: 2, counts: 0 })
      // An empty page past the end knows nothing of the rows before it.
      expect(await counted(3, 2)).toEqual({ items: 0, total: 3, pages: 2, counts: 1 })
    } finally {
      restore()
    }
  })

  it('clamps and echoes perPage, normalises page, and honours skipTotal', async () => {
    const res = await fetch(
      `${server.url}/api/collections/models/records?perPage=5000&page=0&skipTotal=1`,
      { headers: { Authorization: pb.authStore.token } },
    )
    const body = await res.json()
    expect(body).toMatchObject({ page: 1, perPage: 1000, totalItems: -1, totalPages: -1 })
    const defaults = await (
      await fetch(`${server.url}/api/collections/models/records`, {
        headers: { Authorization: pb.authStore.token },
      })
    ).json()
    expect(defaults.perPage).toBe(30)
    expect(defaults.totalItems).toBe(7)
    // A page past any offset SQL can hold is simply empty; a number past exact integers is a 400.
    const far = await (
      await fetch(
        `${server.url}/api/collections/models/records?page=9007199254740991&perPage=1000`,
        { headers: { Authorization: pb.authStore.token } },
      )
    ).json()
    expect(far).toMatchObject({ page: 9007199254740991, perPage: 1000, items: [], totalItems: 7 })
    const huge = await fetch(
      `${server.url}/api/collections/models/records?page=99999999999999999999`,
    )
    expect(huge.status).toBe(400)
    expect((await huge.json()).message).toBe('Invalid page parameter.')
  })

  it('expands relations, nested and as comma lists, and picks fields', async () => {
    const conv = await pb.collection('conversations').create({ model: modelId, title: 'Expand me' })
    const got = await pb.collection('conversations').getOne(conv.id, { expand: 'model,user' })
    expect(got.expand?.model.name).toBe('stories260K')
    expect(got.expand?.user.id).toBe(pb.authStore.record!.id)
    const picked = await pb
      .collection('conversations')
      .getOne(conv.id, { fields: 'id,title,expand.model.name', expand: 'model' })
    expect(picked).toEqual({
      id: conv.id,
      title: 'Expand me',
      expand: { model: { name: 'stories260K' } },
    })
    const list = await pb
      .collection('conversations')
      .getList(1, 1, { filter: `id = "${conv.id}"`, fields: 'id' })
    expect(list.items[0]).toEqual({ id: conv.id })
  })

  it('filters through relation paths and date macros', async () => {
    await pb.collection('conversations').create({ model: modelId, title: 'Relpath' })
    const found = await pb
      .collection('conversations')
      .getFullList({ filter: 'model.name = "stories260K" && title = "Relpath" && created <= @now' })
    expect(found).toHaveLength(1)
    const none = await pb
      .collection('conversations')
      .getFullList({ filter: 'model.name = "nope" && title = "Relpath"' })
    expect(none).toHaveLength(0)
  })

  it('answers bad filters, sorts and params with 400, never 500', async () => {
    for (const query of [
      'filter=title%20%3D',
      'filter=nosuchfield%3D1',
      'sort=nosuchfield',
      'filter=password%3D%22x%22',
      'page=abc',
      'perPage=1.5',
      'skipTotal=maybe',
      `filter=${encodeURIComponent(`title="'; DROP TABLE users;--"`)}`,
    ]) {
      const res = await fetch(`${server.url}/api/collections/conversations/records?${query}`, {
        headers: { Authorization: pb.authStore.token },
      })
      const body = await res.json()
      if (query.startsWith('filter=title%3D%22')) {
        expect(res.status, query).toBe(200)
        continue
      }
      expect(res.status, query).toBe(400)
      expect(body).toMatchObject({ status: 400, data: {} })
      expect(typeof body.message).toBe('string')
    }
  })

  it('answers unknown or malformed expand and fields with 400 before acting', async () => {
    const conv = await pb.collection('conversations').create({ model: modelId, title: 'probe' })
    for (const [query, message] of [
      ['expand=nosuch', 'Invalid expand: "nosuch" is not a relation of conversations.'],
      ['expand=model.nosuch', 'Invalid expand: "model.nosuch" is not a relation of models.'],
      ['expand=title', 'Invalid expand: "title" is not a relation of conversations.'],
      ['fields=id,nosuch', 'Invalid fields: unknown field "nosuch".'],
      ['fields=id,..', 'Invalid fields: ".." is not a field path.'],
    ]) {
      const res = await fetch(
        `${server.url}/api/collections/conversations/records/${conv.id}?${query}`,
        { headers: { Authorization: pb.authStore.token } },
      )
      expect(res.status, query).toBe(400)
      expect((await res.json()).message, query).toBe(message)
    }
    const before = (await pb.collection('conversations').getFullList()).length
    const res = await fetch(`${server.url}/api/collections/conversations/records?fields=bogus`, {
      method: 'POST',
      body: JSON.stringify({ model: modelId }),
      headers: { Authorization: pb.authStore.token, 'Content-Type': 'application/json' },
    })
    expect(res.status).toBe(400)
    expect((await pb.collection('conversations').getFullList()).length).toBe(before)
    // back-relations and the wildcard are fine
    const ok = await pb
      .collection('conversations')
      .getOne(conv.id, { expand: 'requests_via_conversation', fields: '*,expand' })
    expect(ok.expand?.requests_via_conversation).toEqual([])
  })

  it('forbids @request in client filters (403) and reports unknown collections (404)', async () => {
    const err = await pb
      .collection('conversations')
      .getList(1, 1, { filter: 'user = @request.auth.id' })
      .catch((e) => e)
    expect(err.status).toBe(403)
    const missing = await pb
      .collection('nope')
      .getList()
      .catch((e) => e)
    expect(missing.status).toBe(404)
    expect(missing.response.message).toBe('Missing collection context.')
  })

  it('reads available_models as a view with live node counts, and refuses writes to it', async () => {
    const models = await pb.collection('available_models').getFullList({ sort: 'sort_order,name' })
    expect(models.map((m) => m.name)).toEqual([
      'stories260K',
      'qwen2.5-0.5b-instruct',
      'llama-3.2-1b-instruct',
      'qwen2.5-1.5b-instruct',
      'llama-3.2-3b-instruct',
      'qwen2.5-7b-instruct',
      'llama-2-tiny-random',
    ])
    expect(models[0]).toMatchObject({
      node_count: 0,
      credit_multiplier: 1,
      display_name: 'Stories 260K',
    })
    const err = await pb
      .collection('available_models')
      .create({ name: 'x' })
      .catch((e) => e)
    expect(err.status).toBe(400)
    expect(err.response.message).toBe('Unsupported collection type.')
  })

  it('reads the single config record with default sampling values', async () => {
    const list = await pb.collection('config').getList(1, 1)
    expect(list.totalItems).toBe(1)
    expect(list.items[0]).toMatchObject({
      default_temperature: 0.7,
      default_top_p: 0.9,
      default_top_k: 40,
    })
  })

  it('accepts multipart bodies with @jsonPayload like the SDK sends with files', async () => {
    const form = new FormData()
    form.append('title', 'From form')
    form.append('model', modelId)
    form.append('@jsonPayload', JSON.stringify({ title: 'From payload' }))
    const res = await fetch(`${server.url}/api/collections/conversations/records`, {
      method: 'POST',
      body: form,
      headers: { Authorization: pb.authStore.token },
    })
    expect(res.status).toBe(200)
    expect((await res.json()).title).toBe('From payload')
  })

  it('rejects invalid JSON bodies and unknown relation ids with 400', async () => {
    const res = await fetch(`${server.url}/api/collections/conversations/records`, {
      method: 'POST',
      body: '{nope',
      headers: { Authorization: pb.authStore.token, 'Content-Type': 'application/json' },
    })
    expect(res.status).toBe(400)
    const err = await pb
      .collection('conversations')
      .create({ model: 'doesnotexist123' })
      .catch((e) => e)
    expect(err.status).toBe(400)
    expect(err.response.data.model.code).toBe('validation_missing_rel_records')
  })

  it('answers a duplicate unique pair with 400, not 500', async () => {
    const { createAsServer } = await import('./fixtures.ts')
    const node = await createAsServer(server, 'nodes', {
      user: pb.authStore.record!.id,
      device_name: 'dup-box',
    })
    await pb
      .collection('node_models')
      .create({ node: node.id, model: modelId, requested_download: true })
    const err = await pb
      .collection('node_models')
      .create({ node: node.id, model: modelId, requested_download: true })
      .catch((e) => e)
    expect(err.status).toBe(400)
    expect(err.response.message).toBe('Failed to create record.')
    expect(Object.values(err.response.data as Record<string, { code: string }>)[0].code).toBe(
      'validation_not_unique',
    )
  })

  it('answers unknown routes with a PocketBase-shaped 404', async () => {
    const res = await fetch(`${server.url}/api/nope`)
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({
      data: {},
      message: "The requested resource wasn't found.",
      status: 404,
    })
  })
})
