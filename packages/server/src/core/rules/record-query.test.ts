import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FilterError } from '../../tools/filter/filter-error.ts'
import {
  JoinSet,
  compileOwnerCheck,
  compileRecordFilter,
  compileRecordSort,
  evaluateRecordFilter,
  type QueryContext,
} from './record-query.ts'
import { fixtureRows, alice, bob } from './test-fixtures.ts'
import { openTestDatabase, testDialects, type TestDatabase } from './test-databases.ts'

type Case = [collection: string, filter: string, expected: string[]]

const now = new Date('2026-11-22 12:00:00Z')
const serverCases: Case[] = [
  ['requests', 'user = @request.auth.id', ['ra1', 'ra2', 'ra3']],
  ['requests', "status = 'completed'", ['ra1', 'rb1']],
  ['requests', "status != 'completed'", ['ra2', 'ra3', 'rb2']],
  ['requests', "node = ''", ['ra3']],
  ['requests', 'node = null', ['ra3']],
  ['requests', 'node != null', ['ra1', 'ra2', 'rb1', 'rb2']],
  ['requests', "prompt ~ 'hello'", ['ra1']],
  ['requests', "prompt ~ '100%'", ['ra2']],
  ['requests', "prompt ~ 'sure_thing'", ['ra2']],
  ['requests', "prompt ~ 'o_t'", []],
  ['requests', "prompt ~ 'H%o t%'", ['ra1']],
  ['requests', "prompt !~ 'secret'", ['ra1', 'ra2', 'ra3']],
  ['requests', 'prompt = "it\'s \\"quoted\\"\\nline"', ['ra3']],
  ['requests', "prompt = 'it\\'s \"quoted\"\\u000aline'", ['ra3']],
  ['requests', 'temperature > 0.5', ['ra1', 'ra2']],
  ['requests', 'temperature >= 1', ['ra2']],
  ['requests', "tokens_input > '6'", ['ra1', 'rb1']],
  ['requests', 'context_length = 8000', ['ra1']],
  ['requests', 'context_length != 8000', ['ra2', 'ra3', 'rb1', 'rb2']],
  ['requests', 'tokens_input > -1 && tokens_input < 6', ['ra2', 'ra3', 'rb2']],
  ['requests', 'can_retry = true', ['ra2']],
  ['requests', 'can_retry = false', ['ra1', 'ra3', 'rb1', 'rb2']],
  ['requests', 'is_partial = 1', ['rb2']],
  ['requests', 'can_retry != true', ['ra1', 'ra3', 'rb1', 'rb2']],
  ['requests', "status = 'completed' || status = 'failed' && user = 'ub'", ['ra1', 'rb1']],
  ['requests', "(status = 'completed' || status = 'failed') && user = 'ub'", ['rb1']],
  ['requests', "model.name = 'qwen-tiny'", ['ra3', 'rb2']],
  ['requests', "node.user = 'ub'", ['ra2', 'rb1']],
  ['requests', "node.user.name = 'Alice'", ['ra1', 'rb2']],
  ['requests', "conversation.title ~ 'bob'", ['rb1', 'rb2']],
  ['requests', "model.id = 'm1'", ['ra1', 'ra2', 'rb1']],
  ['requests', "created >= '2024-05-03'", ['ra3', 'rb1', 'rb2']],
  ['requests', 'created < @now', ['ra1', 'ra2', 'ra3', 'rb1', 'rb2']],
  ['requests', 'created > @yearStart', []],
  ['requests', '@year > 2000 && @month = 11 && @weekday = 0', ['ra1', 'ra2', 'ra3', 'rb1', 'rb2']],
  ['requests', "status:lower = 'completed' && prompt:lower ~ 'hello'", ['ra1']],
  ['requests', "prompt:lower = 'another secret'", ['rb2']],
  ['requests', "@request.auth.id != ''", ['ra1', 'ra2', 'ra3', 'rb1', 'rb2']],
  ['requests', '@request.auth.verified = true && id ?= "ra1"', ['ra1']],
  ['requests', '@request.body.status = status', ['ra3']],
  [
    'requests',
    '@request.body.status:isset = true && @request.body.zzz:isset = false',
    ['ra1', 'ra2', 'ra3', 'rb1', 'rb2'],
  ],
  ['requests', '@request.body.zzz:isset = true', []],
  ['requests', '@request.body.tags:each ?= status', ['ra2', 'ra3']],
  ['requests', '@request.body.tags:each = status', []],
  [
    'requests',
    '@request.body.tags:length = 2 && @request.method = "GET"',
    ['ra1', 'ra2', 'ra3', 'rb1', 'rb2'],
  ],
  [
    'requests',
    "@request.context = 'default' && @request.query.x = null",
    ['ra1', 'ra2', 'ra3', 'rb1', 'rb2'],
  ],
  ['requests', 'status = 5', []],
  ['requests', "tokens_input ~ '0'", ['ra1', 'ra3', 'rb2']],
  ['requests', "temperature ~ '0.7'", ['ra1']],
  ['requests', "'' = null && null = null // always", ['ra1', 'ra2', 'ra3', 'rb1', 'rb2']],
  ['requests', 'reserved > 1 || temperature = 1', ['ra1', 'ra2']],
  // Credits are stored as integer thousandths; filters see the API's numbers, exactly.
  ['requests', 'reserved = 1.5', ['ra1']],
  ['user_credit_txs', 'amount = 12.345', ['t3']],
  ['user_credit_txs', 'amount > 12.3449 && amount < 12.3451', ['t3']],
  ['user_credit_txs', 'amount < 0', ['t2']],
  ['user_credit_txs', "amount ~ '12.34'", ['t3']],
  ['user_credit_txs', 'balance_after = 0.1', ['t3']],
  ['user_credit_txs', 'amount:lower = "12.345"', ['t3']],
  ['user_balances', 'balance > 5.5', ['ba']],
  ['user_balances', 'balance = 5', ['bb']],
  ['available_models', 'credit_multiplier = 0.5', ['m2']],
  ['available_models', 'credit_multiplier >= 1', ['m1']],
  ['users', "nodes_via_user.status ?= 'online'", ['ua']],
  ['users', 'nodes_via_user.is_active = true', ['ua']],
  ['users', "nodes_via_user.status != 'offline'", ['ua', 'uc']],
  ['users', "nodes_via_user.status ?!= 'offline'", ['ua', 'ub', 'uc']],
  ['users', 'nodes_via_user:length = 2', ['ub']],
  ['users', 'nodes_via_user:length = 0', ['uc']],
  ['users', "requests_via_user.node.user ?= 'ub'", ['ua', 'ub']],
  ['users', "conversations_via_user.model.name ?= 'qwen-tiny'", ['ua']],
  ['users', "name ~ '%100%'", ['uc']],
  ['users', "name ~ '100%'", []],
  ['users', "name ~ '_100\\%'", ['uc']],
  ['users', "password = 'hashA' && tokenKey != ''", ['ua']],
  [
    'node_models',
    "node.user = @request.auth.id || (@request.auth.id != '' && is_serving = true)",
    ['nm1', 'nm2'],
  ],
  ['node_models', 'tokens_per_second > 10', ['nm1']],
  ['available_models', 'node_count > 0', ['m1']],
  ['available_models', "name ~ 'qwen'", ['m2']],
  ['nodes', 'reputation_score >= 4.5 && hardware ~ \'"gpu"\'', ['na']],
  // Six relation hops (the limit), one of them a back-relation.
  [
    'user_credit_txs',
    "request.node.user.requests_via_user.conversation.model.name ?= 'qwen-tiny'",
    ['t2'],
  ],
  [
    'node_jobs',
    "request.conversation.user.requests_via_user.node.user.name ?= 'Bob'",
    ['j1', 'j2', 'j3'],
  ],
]

const clientCases: [auth: typeof alice | null, ...Case][] = [
  [alice, 'requests', "prompt ~ 'secret'", []],
  [bob, 'requests', "prompt ~ 'secret'", ['rb1', 'rb2']],
  [alice, 'requests', "prompt ~ 'hello'", ['ra1']],
  [alice, 'requests', "prompt:lower = 'another secret'", []],
  [bob, 'requests', "prompt:lower = 'another secret'", ['rb2']],
  [alice, 'requests', "conversation = 'cb1' || conversation = 'ca2'", ['ra3']],
  [bob, 'requests', "conversation = 'cb1' && user = 'ub'", ['rb1', 'rb2']],
  [alice, 'requests', 'reserved = 1.5 || can_retry = true', ['ra1', 'ra2']],
  [alice, 'requests', "response != ''", ['ra1']],
  [alice, 'requests', "user = 'ub'", []],
  [alice, 'requests', "user = 'ua'", ['ra1', 'ra2', 'ra3']],
  [alice, 'requests', "status = 'completed'", ['ra1', 'rb1']],
  [alice, 'requests', "node.user.email ~ 'example'", ['ra1', 'rb2']],
  [alice, 'requests', "conversation.title = 'Bob chat'", []],
  [bob, 'requests', "conversation.title = 'Bob chat'", ['rb1', 'rb2']],
  [alice, 'users', "email = 'bob@example.com'", ['ub']],
  [alice, 'users', "email = 'carol@example.com'", []],
  [alice, 'users', "email = 'alice@example.com'", ['ua']],
  [null, 'users', "email ~ 'alice'", []],
  [alice, 'users', "requests_via_user.prompt ?~ 'secret'", []],
  [bob, 'users', "requests_via_user.prompt ?~ 'secret'", ['ub']],
  [alice, 'node_models', 'requested_download = true', []],
  [bob, 'node_models', 'requested_download = true', ['nm2']],
  [alice, 'node_jobs', "request.prompt ~ 'secret'", []],
  [alice, 'node_jobs', "status = 'completed' && created < @now", ['j1', 'j2']],
]

describe.each(testDialects())('record filters on %s', (dialect) => {
  let database: TestDatabase
  const allRows: Record<string, Record<string, unknown>[]> = {}

  beforeAll(async () => {
    database = await openTestDatabase(dialect, fixtureRows)
    for (const table of [
      'requests',
      'users',
      'node_models',
      'available_models',
      'nodes',
      'node_jobs',
      'user_credit_txs',
      'user_balances',
    ]) {
      const { rows } = await sql<
        Record<string, unknown>
      >`SELECT * FROM ${sql.table(table)}`.execute(database.db)
      allRows[table] = rows
    }
  })
  afterAll(() => database?.close())

  const context = (auth: Record<string, unknown> | null): QueryContext => ({
    dialect,
    auth,
    now,
    method: 'get',
    body: { status: 'pending', tags: ['failed', 'pending'] },
  })

  async function ids(collection: string, filter: string, ctx: QueryContext, client: boolean) {
    const joins = new JoinSet()
    const where = compileRecordFilter(collection, filter, ctx, joins, { client })
    const query = sql<{
      id: string
    }>`SELECT r.id FROM ${sql.table(collection)} AS r ${joins.sql()} WHERE ${where} ORDER BY r.id`
    return (await query.execute(database.db)).rows.map((r) => r.id)
  }

  function expectEvaluationAgrees(
    collection: string,
    filter: string,
    ctx: QueryContext,
    client: boolean,
    matched: string[],
  ) {
    for (const row of allRows[collection]) {
      const result = evaluateRecordFilter(collection, filter, row, ctx, { client })
      if (result !== undefined)
        expect([row.id, result]).toEqual([row.id, matched.includes(row.id as string)])
    }
  }

  it.each(serverCases)('server %s: %s', async (collection, filter, expected) => {
    const ctx = context(alice)
    const got = await ids(collection, filter, ctx, false)
    expect(got).toEqual(expected)
    expectEvaluationAgrees(collection, filter, ctx, false, got)
  })

  it.each(clientCases)('client %#: %s %s', async (auth, collection, filter, expected) => {
    const ctx = context(auth)
    const got = await ids(collection, filter, ctx, true)
    expect(got).toEqual(expected)
    expectEvaluationAgrees(collection, filter, ctx, true, got)
  })

  it('evaluates local fields in memory and defers relation paths', () => {
    const ctx = context(alice)
    const row = allRows.requests.find((r) => r.id === 'ra1')!
    expect(evaluateRecordFilter('requests', "status = 'completed'", row, ctx)).toBe(true)
    expect(evaluateRecordFilter('requests', "model.name = 'x'", row, ctx)).toBeUndefined()
    expect(
      evaluateRecordFilter('requests', "model.name = 'x' && status = 'failed'", row, ctx),
    ).toBe(false)
    expect(
      evaluateRecordFilter('requests', 'can_retry = false', { ...row, can_retry: false }, ctx),
    ).toBe(true)
  })

  it('without a client flag, leaves values the caller may not read to SQL', () => {
    const row = (table: string, id: string) => allRows[table].find((r) => r.id === id)!
    const rb1 = row('requests', 'rb1')
    const secret = "prompt ~ 'secret'"
    expect(evaluateRecordFilter('requests', secret, rb1, context(alice))).toBeUndefined()
    expect(evaluateRecordFilter('requests', secret, rb1, context(alice), { client: true })).toBe(
      false,
    )
    expect(evaluateRecordFilter('requests', secret, rb1, context(alice), { client: false })).toBe(
      true,
    )
    expect(evaluateRecordFilter('requests', secret, rb1, context(bob))).toBe(true)
    expect(evaluateRecordFilter('requests', `${secret} && status = 'x'`, rb1, context(alice))).toBe(
      false,
    )
    const ua = row('users', 'ua')
    expect(evaluateRecordFilter('users', "tokenKey = 'tkA'", ua, context(alice))).toBeUndefined()
    expect(
      evaluateRecordFilter('users', "tokenKey = 'tkA'", ua, context(alice), { client: false }),
    ).toBe(true)
    expect(() =>
      evaluateRecordFilter('users', "tokenKey = 'tkA'", ua, context(alice), { client: true }),
    ).toThrow(FilterError)
    expect(
      evaluateRecordFilter('users', "email ~ 'carol'", row('users', 'uc'), context(alice)),
    ).toBeUndefined()
    expect(evaluateRecordFilter('users', "email ~ 'bob'", row('users', 'ub'), context(alice))).toBe(
      true,
    )
    expect(evaluateRecordFilter('users', "email ~ 'alice'", ua, context(alice))).toBe(true)
  })

  it('guests: @request.auth.* is NULL', async () => {
    const ctx = context(null)
    expect(await ids('requests', "@request.auth.id != ''", ctx, false)).toEqual([])
    expect(await ids('conversations', 'user = @request.auth.id', ctx, false)).toEqual([])
    expect(await ids('requests', '@request.auth.verified = null', ctx, false)).toHaveLength(5)
  })

  it('sorts, with NULLs first ascending and private values hidden', async () => {
    const ctx = context(alice)
    const order = async (collection: string, text: string) => {
      const joins = new JoinSet()
      const items = compileRecordSort(collection, text, ctx, joins)
      const query = sql<{
        id: string
      }>`SELECT r.id FROM ${sql.table(collection)} AS r ${joins.sql()} ORDER BY ${sql.join([...items, sql`r.id`])}`
      return (await query.execute(database.db)).rows.map((r) => r.id)
    }
    expect(await order('requests', '-created')).toEqual(['rb2', 'rb1', 'ra3', 'ra2', 'ra1'])
    expect(await order('requests', 'model.name,-created')).toEqual([
      'rb1',
      'ra2',
      'ra1',
      'rb2',
      'ra3',
    ])
    expect(await order('requests', '+node.device_name')).toEqual([
      'ra3',
      'ra1',
      'rb2',
      'ra2',
      'rb1',
    ])
    expect(await order('requests', 'prompt')).toEqual(['rb1', 'rb2', 'ra2', 'ra1', 'ra3'])
    expect(await order('models', '-credit_multiplier,name')).toEqual(['m3', 'm1', 'm2'])
    expect(await order('user_credit_txs', 'amount')).toEqual(['t2', 't3', 't1'])
    expect(await order('users', 'name')).toEqual(['ua', 'ub', 'uc'])
    expect((await order('requests', '@random')).sort()).toEqual(['ra1', 'ra2', 'ra3', 'rb1', 'rb2'])
  })

  it('owner check compiles the owner rule', async () => {
    const ctx = context(bob)
    const joins = new JoinSet()
    const check = compileOwnerCheck('node_models', ctx, joins)!
    const query = sql<{
      id: string
    }>`SELECT r.id FROM node_models AS r ${joins.sql()} WHERE ${check} ORDER BY r.id`
    expect((await query.execute(database.db)).rows.map((r) => r.id)).toEqual(['nm2', 'nm3', 'nm4'])
    expect(compileOwnerCheck('models', ctx, new JoinSet())).toBeNull()
  })
})

describe('record filter errors', () => {
  const ctx: QueryContext = { dialect: 'sqlite', auth: alice }
  const compile = (collection: string, text: string, client = true) =>
    compileRecordFilter(collection, text, ctx, new JoinSet(), { client })

  it.each([
    ['requests', 'foo = 1', 'Invalid filter: unknown field "foo".'],
    ['requests', 'model.foo = 1', 'Invalid filter: unknown field "foo" in "model.foo".'],
    ['users', "password = 'x'", 'Invalid filter: unknown field "password".'],
    ['users', "tokenKey = 'x'", 'Invalid filter: unknown field "tokenKey".'],
    [
      'requests',
      'status.name = 1',
      'Invalid filter: "status.name": "status" is not a relation field.',
    ],
    [
      'requests',
      'status:isset = true',
      'Invalid filter: ":isset" can only be used with @request.* fields.',
    ],
    [
      'requests',
      'status:length = 1',
      'Invalid filter: ":length" needs a multi-valued field, not "status:length".',
    ],
    [
      'nodes',
      "hardware.gpu = 'm2'",
      'Invalid filter: "hardware.gpu": paths inside JSON fields are not supported.',
    ],
    ['requests', '@foo = 1', 'Invalid filter: unknown field "@foo".'],
    [
      'requests',
      'node.user.password = 1',
      'Invalid filter: unknown field "password" in "node.user.password".',
    ],
    ['nope', 'id = 1', 'Invalid filter: unknown collection "nope".'],
  ])('%s: %s', (collection, text, message) => {
    expect(() => compile(collection, text)).toThrow(new FilterError(message))
  })

  it('forbids @request and @collection in client filters and sorts', () => {
    for (const text of ["@request.auth.id = ''", "status = 'x' || @collection.users.id = 'a'"]) {
      try {
        compile('requests', text)
        expect.unreachable()
      } catch (err) {
        expect(err).toBeInstanceOf(FilterError)
        expect((err as FilterError).forbidden).toBe(true)
        expect((err as FilterError).message).toMatch(
          /^Only superusers can filter by @(request|collection)\.$/,
        )
      }
    }
    expect(() => compileRecordSort('requests', '@request.auth.id', ctx, new JoinSet())).toThrow(
      /Only superusers/,
    )
  })

  it('allows hidden fields and @request in server rules', () => {
    expect(() => compile('users', "password = 'x' && @request.auth.id != ''", false)).not.toThrow()
  })

  it('reports sort errors as sort errors', () => {
    expect(() => compileRecordSort('users', 'password', ctx, new JoinSet())).toThrow(
      'Invalid sort: unknown field "password".',
    )
    expect(() => compileRecordSort('users', '-nodes_via_user.status', ctx, new JoinSet())).toThrow(
      /multi-valued/,
    )
    expect(() => compileRecordSort('users', 'a,b,c,d,e,f,g,h,i', ctx, new JoinSet())).toThrow(
      /at most 8/,
    )
  })

  it('limits relation depth', () => {
    const deep = ['node', 'user', 'nodes_via_user', 'user', 'nodes_via_user'].join('.')
    expect(() => compile('node_models', `${deep}.id = 'x'`, false)).toThrow(/nested back-relations/)
  })
})
