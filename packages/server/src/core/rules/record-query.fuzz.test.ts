/**
 * Property tests: random and hostile filters either fail with FilterError or compile to SQL that
 * runs on every dialect, agrees with the in-memory evaluator, and can't reveal another user's
 * private data (the result is the same whatever bob's private values are).
 */
import fc from 'fast-check'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findCollection } from '../collections/registry.ts'
import { FilterError } from '../../tools/filter/filter-error.ts'
import {
  JoinSet,
  compileRecordFilter,
  evaluateRecordFilter,
  type QueryContext,
} from './record-query.ts'
import { alice, fixtureRows } from './test-fixtures.ts'
import { openTestDatabase, testDialects, type Rows, type TestDatabase } from './test-databases.ts'

const collectionNames = ['requests', 'conversations', 'users', 'node_models', 'node_jobs'] as const

/** The same world, except every private value of bob's (and carol's hidden e-mail) differs. */
function bobsSecretsChanged(rows: Rows): Rows {
  const copy = structuredClone(rows)
  for (const r of copy.requests) {
    if (r.user !== 'ub') continue
    Object.assign(r, {
      prompt: 'hello there',
      response: 'Hi!',
      error_message: 'boom',
      reserved: 1.5,
      can_retry: true,
      conversation: 'ca1',
    })
  }
  for (const m of copy.node_models) {
    if (m.node !== 'nb' && m.node !== 'nb2') continue
    Object.assign(m, {
      requested_download: false,
      requested_serving: true,
      download_progress: '100',
      error_message: '',
    })
  }
  for (const j of copy.node_jobs) if (j.id === 'j2') j.request = 'ra1'
  for (const u of copy.users) if (u.id === 'uc') u.email = 'alice@example.org'
  return copy
}

const paths: Record<(typeof collectionNames)[number], string[]> = {
  requests: [
    'model.name',
    'node.user',
    'node.user.email',
    'node.device_name',
    'conversation.title',
    'conversation.user',
    'node_jobs_via_request.status',
    'node_jobs_via_request.node.user',
    'node.user.name',
    'prompt:lower',
    'user_credit_txs_via_request.amount',
    'node_jobs_via_request:length',
  ],
  conversations: [
    'model.name',
    'user.email',
    'requests_via_conversation.response',
    'requests_via_conversation.prompt',
    'requests_via_conversation:length',
    'title:lower',
    'requests_via_conversation.node.user',
  ],
  users: [
    'requests_via_user.prompt',
    'nodes_via_user.device_name',
    'requests_via_user:length',
    'email:lower',
    'conversations_via_user.title',
    'requests_via_user.conversation.title',
  ],
  node_models: [
    'node.user',
    'node.user.email',
    'model.name',
    'node.device_name',
    'error_message:lower',
    'node.user.name',
  ],
  node_jobs: [
    'request.prompt',
    'request.user',
    'request.node.user.name',
    'node.user',
    'request.conversation.title',
    'request.response:lower',
  ],
}
const extras = [
  'id',
  'bogus',
  'model.bogus',
  'true',
  'false',
  'null',
  '@now',
  '@todayStart',
  '@year',
  '@weekday',
  'status:each',
  'name:isset',
  'password',
  'tokenKey',
]
const fieldsOf = (name: (typeof collectionNames)[number]) => [
  ...findCollection(name)!.fields.map((f) => f.name),
  ...paths[name],
  ...paths[name],
  ...extras,
]
const operators = [
  '=',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
  '~',
  '!~',
  '?=',
  '?!=',
  '?>',
  '?>=',
  '?<',
  '?<=',
  '?~',
  '?!~',
]
const hostile = [
  "'; DROP TABLE requests; --",
  '" OR 1=1 --',
  '%',
  '_',
  '\\',
  '%%',
  '\\%',
  'a\\',
  "') OR ('1'='1",
  'hello',
  'secret',
  'Hi!',
  'boom',
  'alice@example.com',
  'alice@example.org',
  'ua',
  'ub',
  'ca1',
  '1.5',
  '0',
  '2024-05-03',
  '',
  'Ω≈ç√',
  '😀',
  '\u2028',
  'NULL',
  'completed',
]

const quote = (s: string, single: boolean) =>
  single ? `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(s)
const text = fc
  .tuple(
    fc.oneof(fc.constantFrom(...hostile), fc.string({ unit: 'grapheme', maxLength: 12 })),
    fc.boolean(),
  )
  .map(([s, single]) => quote(s.replaceAll('\0', ''), single))
const number = fc
  .oneof(
    fc.integer({ min: -10, max: 10_000 }),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
  )
  .map((n) => String(n))
  .filter((n) => /^-?\d+(\.\d+)?$/.test(n))
function filterFor(name: (typeof collectionNames)[number]) {
  const fields = fieldsOf(name)
  const operand = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...fields) },
    { weight: 2, arbitrary: text },
    { weight: 1, arbitrary: number },
  )
  const comparison = fc
    .tuple(operand, fc.constantFrom(...operators), operand)
    .map((p) => p.join(' '))
  const { expr } = fc.letrec<{ expr: string }>((tie) => ({
    expr: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      comparison,
      fc.tuple(tie('expr'), fc.constantFrom('&&', '||'), tie('expr')).map((p) => p.join(' ')),
      tie('expr').map((e) => `(${e})`),
    ),
  }))
  const soupTokens = [
    ...fields,
    ...operators,
    ...hostile.map((h) => quote(h, false)),
    '(',
    ')',
    '&&',
    '||',
    '"',
    "'",
    '//',
    '\n',
    ',',
    '-',
    '1.',
    '@request.auth.id',
    '@collection.users.id',
  ]
  const soup = fc.array(fc.constantFrom(...soupTokens), { maxLength: 12 }).map((t) => t.join(' '))
  return fc.oneof(
    { weight: 6, arbitrary: expr },
    { weight: 2, arbitrary: soup },
    { weight: 1, arbitrary: junk },
    { weight: 1, arbitrary: huge },
  )
}
const junk = fc.string({ unit: 'binary', maxLength: 60 })
const huge = fc.constantFrom(
  `status = "${'x'.repeat(3400)}"`,
  'a'.repeat(4000),
  Array.from({ length: 201 }, () => 'id != ""').join(' && '),
  `${'('.repeat(40)}id = 'x'${')'.repeat(40)}`,
  Array.from({ length: 60 }, () => "id ~ 'a' || created > @now").join(' && '),
)
const collectionAndFilter = fc
  .constantFrom(...collectionNames)
  .chain((name) => fc.tuple(fc.constant(name), filterFor(name)))

describe.each(testDialects())('hostile filters on %s', (dialect) => {
  let worlds: TestDatabase[] = []
  let rowsOfFirst: Record<string, Record<string, unknown>[]> = {}
  const ctx: QueryContext = { dialect, auth: alice, now: new Date('2026-11-22T12:00:00Z') }

  beforeAll(async () => {
    worlds = [
      await openTestDatabase(dialect, fixtureRows),
      await openTestDatabase(dialect, bobsSecretsChanged(fixtureRows)),
    ]
    for (const name of collectionNames) {
      const { rows } = await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(name)}`.execute(
        worlds[0].db,
      )
      rowsOfFirst[name] = rows
    }
  })
  afterAll(async () => {
    for (const w of worlds) await w.close()
    worlds = []
    rowsOfFirst = {}
  })

  async function visible(world: TestDatabase, name: string, filter: string) {
    const joins = new JoinSet()
    const rule = compileRecordFilter(name, findCollection(name)!.listRule!, ctx, joins, {
      client: false,
    })
    const where = compileRecordFilter(name, filter, ctx, joins, { client: true })
    const query = sql<{
      id: string
      user?: string
    }>`SELECT r.* FROM ${sql.table(name)} AS r ${joins.sql()}
      WHERE (${rule}) AND (${where}) ORDER BY r.id`
    return (await query.execute(world.db)).rows
  }

  const stats = { compiled: 0, rejected: 0 }
  afterAll(() => {
    // Guards the generators: most inputs must get past the parser for the property to mean much.
    expect(stats.compiled).toBeGreaterThan(stats.rejected / 4)
    if (process.env.FUZZ_STATS) console.info(stats)
  })

  it('never errors in SQL, never leaks, and agrees with the evaluator', async () => {
    await fc.assert(
      fc.asyncProperty(collectionAndFilter, async ([name, filter]) => {
        try {
          compileRecordFilter(name, filter, ctx, new JoinSet(), { client: true })
          stats.compiled++
        } catch (err) {
          stats.rejected++
          expect(err).toBeInstanceOf(FilterError)
          expect((err as Error).message).not.toMatch(/SELECT|JOIN|undefined/)
          return
        }
        const [first, second] = await Promise.all(worlds.map((w) => visible(w, name, filter)))
        expect(second.map((r) => r.id)).toEqual(first.map((r) => r.id))
        if (name === 'conversations') for (const row of first) expect(row.user).toBe('ua')
        const matched = new Set(first.map((r) => r.id))
        for (const row of rowsOfFirst[name]) {
          const result = evaluateRecordFilter(name, filter, row, ctx, { client: true })
          // Without the flag the evaluator may only answer where both modes agree.
          const auto = evaluateRecordFilter(name, filter, row, ctx)
          if (auto !== undefined && result !== undefined)
            expect([row.id, auto]).toEqual([row.id, result])
          if (result === undefined) continue
          const rule = evaluateRecordFilter(name, findCollection(name)!.listRule!, row, ctx)
          if (rule === undefined) continue
          expect([row.id, result && rule]).toEqual([row.id, matched.has(row.id as string)])
        }
      }),
      { numRuns: Number(process.env.FUZZ_RUNS) || (dialect === 'postgres' ? 250 : 400) },
    )
  })
})
