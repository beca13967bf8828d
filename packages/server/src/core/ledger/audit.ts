/**
 * @module The ledger audit: proves on a live database that no credit was created or lost. It
 * checks, for every account, balance = the sum of its ledger rows, the running totals, that holds
 * equal the reserves of open requests plus the holds awaiting a deleted request's charge, that pending earnings equal their rows, that every
 * transfer's debits equal its credits per request (a pending earning standing for its credit),
 * and that every amount is exact integer units. Read-only; the admin command prints the report.
 */
import { sql } from 'kysely'
import type { Db } from '../../db/database.ts'
import { fromUnits } from './credits.ts'
import { DELETION_HOLDS } from './deleted-requests.ts'
import { OPEN_STATUSES } from './settlement.ts'
import { txTypes, type TxTypeRule } from './tx-types.ts'

export interface AuditCheck {
  name: string
  /** What was checked, with counts. */
  detail: string
  problems: string[]
}

export interface AuditReport {
  ok: boolean
  checks: AuditCheck[]
}

interface Account {
  balance: number
  held: number
  earned: number
  spent: number
}

const MAX_PROBLEMS = 20
const credits = (units: number) => `${fromUnits(units)}`

export async function auditLedger(db: Db): Promise<AuditReport> {
  const accounts = new Map<string, Account>()
  for (const r of await db
    .selectFrom('user_balances')
    .select(['user', 'balance', 'held', 'total_earned', 'total_spent'])
    .execute()) {
    accounts.set(String(r.user), {
      balance: Number(r.balance),
      held: Number(r.held),
      earned: Number(r.total_earned),
      spent: Number(r.total_spent),
    })
  }
  const sums = await db
    .selectFrom('user_credit_txs')
    .select([
      'user',
      'type',
      (eb) => eb.fn.sum<number>('amount').as('total'),
      (eb) => eb.fn.countAll<number>().as('rows'),
    ])
    .groupBy(['user', 'type'])
    .execute()
  const reserves = await db
    .selectFrom('requests')
    .select(['user', (eb) => eb.fn.sum<number>('reserved').as('total')])
    .where('status', 'in', OPEN_STATUSES)
    .groupBy('user')
    .execute()
  const awaiting = await db
    .selectFrom(DELETION_HOLDS)
    .select(['user', (eb) => eb.fn.sum<number>('amount').as('total')])
    .groupBy('user')
    .execute()
  const checks = [
    await exactAmounts(db, accounts),
    balancesMatchRows(accounts, sums),
    holdsMatchReserves(accounts, reserves, awaiting),
    await pendingMatchesRows(db),
    await transfersBalance(db),
  ]
  return { ok: checks.every((c) => c.problems.length === 0), checks }
}

/** Every stored amount is a whole number of units (no floating point) and none is negative. */
async function exactAmounts(db: Db, accounts: Map<string, Account>): Promise<AuditCheck> {
  const problems: string[] = []
  for (const [user, a] of accounts) {
    for (const [name, v] of Object.entries(a)) {
      if (!Number.isSafeInteger(v) || v < 0) problems.push(`user ${user}: ${name} is ${v} units`)
    }
  }
  // SQLite would keep a fraction in an INTEGER column as a REAL: compare with its integer cast.
  const inexact = (c: string) =>
    sql<boolean>`(${sql.ref(c)} < 0 OR ${sql.ref(c)} <> CAST(${sql.ref(c)} AS BIGINT))`
  const badRows = await db
    .selectFrom('user_credit_txs')
    .select(['id', 'type', 'amount', 'balance_after'])
    .where((eb) =>
      eb.or([
        inexact('amount'),
        sql<boolean>`${sql.ref('balance_after')} <> CAST(${sql.ref('balance_after')} AS BIGINT)`,
        eb('type', 'not in', Object.keys(txTypes)),
      ]),
    )
    .limit(MAX_PROBLEMS)
    .execute()
  for (const r of badRows)
    problems.push(
      `ledger row ${r.id}: ${r.type} amount ${r.amount}, balance_after ${r.balance_after}`,
    )
  const badRequests = await db
    .selectFrom('requests')
    .select(['id', 'reserved', 'cost'])
    .where((eb) => eb.or([inexact('reserved'), inexact('cost')]))
    .limit(MAX_PROBLEMS)
    .execute()
  for (const r of badRequests)
    problems.push(`request ${r.id}: reserved ${r.reserved}, cost ${r.cost}`)
  const badHolds = await db
    .selectFrom(DELETION_HOLDS)
    .select(['id', 'amount'])
    .where((eb) => eb.or([inexact('amount'), eb('amount', '=', 0)]))
    .limit(MAX_PROBLEMS)
    .execute()
  for (const r of badHolds)
    problems.push(`hold awaiting the charge of deleted request ${r.id}: amount ${r.amount}`)
  const counted = await db
    .selectFrom('user_credit_txs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst()
  return {
    name: 'exact amounts',
    detail: `${accounts.size} balances, ${Number(counted?.n ?? 0)} ledger rows, the requests' reserves and costs and the holds awaiting a deletion's charge are whole, non-negative units of known types`,
    problems: problems.slice(0, MAX_PROBLEMS),
  }
}

/** balance = sum of the account's rows; totals = their earned / spent rows; a closed account
 * (rows but no balance) sums to zero. */
function balancesMatchRows(
  accounts: Map<string, Account>,
  sums: Array<{ user: unknown; type: unknown; total: unknown }>,
): AuditCheck {
  const derived = new Map<string, Account>()
  for (const s of sums) {
    const user = String(s.user)
    const rule: TxTypeRule | undefined = txTypes[String(s.type) as keyof typeof txTypes]
    const d = derived.get(user) ?? { balance: 0, held: 0, earned: 0, spent: 0 }
    const total = Number(s.total ?? 0)
    if (rule) {
      d.balance += rule.sign * total
      d.earned += (rule.earned ?? 0) * total
      d.spent += (rule.spent ?? 0) * total
    }
    derived.set(user, d)
  }
  const problems: string[] = []
  let closed = 0
  for (const [user, a] of accounts) {
    const d = derived.get(user) ?? { balance: 0, held: 0, earned: 0, spent: 0 }
    if (a.balance !== d.balance)
      problems.push(
        `user ${user}: balance ${credits(a.balance)} but its ledger rows sum to ${credits(d.balance)}`,
      )
    if (a.earned !== d.earned)
      problems.push(
        `user ${user}: total_earned ${credits(a.earned)} but its earnings sum to ${credits(d.earned)}`,
      )
    if (a.spent !== d.spent)
      problems.push(
        `user ${user}: total_spent ${credits(a.spent)} but its spending sums to ${credits(d.spent)}`,
      )
  }
  for (const [user, d] of derived) {
    if (accounts.has(user)) continue
    closed++
    if (d.balance !== 0)
      problems.push(`${user} has no balance but its ledger rows sum to ${credits(d.balance)}`)
  }
  return {
    name: 'balances',
    detail: `${accounts.size} balances equal the sum of their ledger rows (and their earned/spent totals); ${closed} closed accounts sum to 0`,
    problems: problems.slice(0, MAX_PROBLEMS),
  }
}

/**
 * held = the reserves of the account's open (pending, processing) requests + its holds awaiting a
 * deleted request's charge (`_deletion_holds`).
 */
function holdsMatchReserves(
  accounts: Map<string, Account>,
  reserves: Array<{ user: unknown; total: unknown }>,
  awaiting: Array<{ user: unknown; total: unknown }>,
): AuditCheck {
  const reserved = new Map(reserves.map((r) => [String(r.user), Number(r.total ?? 0)]))
  const kept = new Map(awaiting.map((r) => [String(r.user), Number(r.total ?? 0)]))
  const problems: string[] = []
  let held = 0
  let keptTotal = 0
  for (const [user, a] of accounts) {
    const r = reserved.get(user) ?? 0
    const k = kept.get(user) ?? 0
    held += a.held
    keptTotal += k
    if (a.held !== r + k)
      problems.push(
        `user ${user}: ${credits(a.held)} held but its open requests reserve ${credits(r)}` +
          (k ? ` and deletions awaiting their charge hold ${credits(k)}` : ''),
      )
  }
  for (const [user, r] of reserved) {
    if (!accounts.has(user) && r !== 0)
      problems.push(`user ${user}: open requests reserve ${credits(r)} without a balance`)
  }
  for (const [user, k] of kept) {
    if (!accounts.has(user) && k !== 0)
      problems.push(
        `user ${user}: deletions awaiting their charge hold ${credits(k)} without a balance`,
      )
  }
  return {
    name: 'holds',
    detail: `${credits(held)} credits held in ${accounts.size} balances equal the reserves of open requests and the ${credits(keptTotal)} awaiting a deletion's charge`,
    problems: problems.slice(0, MAX_PROBLEMS),
  }
}

/**
 * Earnings held for nodes on probation: every owner's and every node's pending total equals its
 * rows still pending (pending-earnings.ts), and no row is left half-settled or negative.
 */
async function pendingMatchesRows(db: Db): Promise<AuditCheck> {
  const rows = await db
    .selectFrom('_pending_earnings')
    .select(['id', 'node', 'owner', 'amount', 'status'])
    .execute()
  const byOwner = new Map<string, number>()
  const byNode = new Map<string, number>()
  const problems: string[] = []
  let pending = 0
  for (const r of rows) {
    const amount = Number(r.amount)
    if (!Number.isSafeInteger(amount) || amount <= 0)
      problems.push(`pending earning ${r.id}: amount ${r.amount} units`)
    if (!['pending', 'released', 'reversed', 'forfeited'].includes(String(r.status)))
      problems.push(`pending earning ${r.id}: status ${r.status}`)
    if (r.status !== 'pending') continue
    pending += amount
    byOwner.set(String(r.owner), (byOwner.get(String(r.owner)) ?? 0) + amount)
    byNode.set(String(r.node), (byNode.get(String(r.node)) ?? 0) + amount)
  }
  const compare = (
    what: string,
    stored: Array<{ id: unknown; total: unknown }>,
    derived: Map<string, number>,
  ) => {
    const seen = new Set<string>()
    for (const s of stored) {
      const id = String(s.id)
      seen.add(id)
      const want = derived.get(id) ?? 0
      if (Number(s.total) !== want)
        problems.push(
          `${what} ${id}: ${credits(Number(s.total))} pending but its pending rows sum to ${credits(want)}`,
        )
    }
    for (const [id, want] of derived)
      if (!seen.has(id) && want !== 0)
        problems.push(
          `${what} ${id} is gone but ${credits(want)} of its earnings are still pending`,
        )
  }
  compare(
    'user',
    await db
      .selectFrom('user_balances')
      .select(['user as id', 'pending_earnings as total'])
      .execute(),
    byOwner,
  )
  compare(
    'node',
    await db.selectFrom('nodes').select(['id', 'pending_earnings as total']).execute(),
    byNode,
  )
  return {
    name: 'pending earnings',
    detail: `${credits(pending)} credits pending for ${byNode.size} nodes on probation equal their owners' and nodes' pending totals`,
    problems: problems.slice(0, MAX_PROBLEMS),
  }
}

/**
 * For every transfer group (inference, ...), each request's debits equal its credits; in the
 * inference group an earning held for a node on probation (or forfeited) counts as the credit.
 */
async function transfersBalance(db: Db): Promise<AuditCheck> {
  const groups = new Map<string, { credits: string[]; debits: string[] }>()
  for (const [type, rule] of Object.entries(txTypes) as Array<[string, TxTypeRule]>) {
    if (!rule.transfer) continue
    const g = groups.get(rule.transfer) ?? { credits: [], debits: [] }
    ;(rule.sign > 0 ? g.credits : g.debits).push(type)
    groups.set(rule.transfer, g)
  }
  const problems: string[] = []
  const parts: string[] = []
  for (const [group, types] of groups) {
    const rows = await db
      .selectFrom('user_credit_txs')
      .select(['request', 'type', (eb) => eb.fn.sum<number>('amount').as('total')])
      .where('type', 'in', [...types.credits, ...types.debits])
      .groupBy(['request', 'type'])
      .execute()
    const net = new Map<string, number>()
    let moved = 0
    if (group === 'inference') {
      const held = await db
        .selectFrom('_pending_earnings')
        .select(['request', (eb) => eb.fn.sum<number>('amount').as('total')])
        .where('status', 'in', ['pending', 'forfeited'])
        .groupBy('request')
        .execute()
      for (const r of held) net.set(String(r.request), Number(r.total ?? 0))
    }
    for (const r of rows) {
      const total = Number(r.total ?? 0)
      const sign = types.credits.includes(String(r.type)) ? 1 : -1
      if (sign > 0) moved += total
      net.set(String(r.request), (net.get(String(r.request)) ?? 0) + sign * total)
    }
    let unbalanced = 0
    for (const [request, n] of net) {
      if (n === 0) continue
      unbalanced++
      problems.push(
        `${group} transfer of request ${request || '(none)'}: credits exceed debits by ${credits(n)}`,
      )
    }
    parts.push(
      `${group}: ${credits(moved)} credits over ${net.size} requests, debits = credits${unbalanced ? ` except ${unbalanced}` : ''}`,
    )
  }
  return { name: 'transfers', detail: parts.join('; '), problems: problems.slice(0, MAX_PROBLEMS) }
}

/** The report as the admin command prints it. */
export function formatAudit(report: AuditReport): string {
  const lines: string[] = []
  for (const c of report.checks) {
    lines.push(`${c.problems.length ? 'FAIL' : 'ok  '} ${c.name}: ${c.detail}`)
    for (const p of c.problems) lines.push(`       ${p}`)
  }
  lines.push(report.ok ? 'Ledger audit passed.' : 'LEDGER AUDIT FAILED.')
  return lines.join('\n')
}
