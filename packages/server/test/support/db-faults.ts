/**
 * @module Database faults on demand: a Kysely plugin, put in front of a running coordinator's
 * database, that makes chosen statements fail the way a lost connection or a failed write does
 * (the statement's promise rejects; inside a transaction, the transaction rolls back). Statements
 * are named by kind and tables, e.g. `update nodes`, `select node_models,models` (the first table,
 * then the joined ones), `insert node_jobs`, `raw ...`. It can also hand a statement's result back
 * late (`delay`), as a slow database does.
 */
import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely'
import type { TestServer } from '../harness.ts'

interface Rule {
  match: RegExp
  /** Statements it still fails (Infinity: until cleared). */
  left: number
  /** Not a failure: the statement runs, and its result comes back this much later. */
  delayMs?: number
}

function tableName(node: OperationNode | undefined): string {
  if (!node) return '?'
  const n = node as unknown as Record<string, unknown>
  if (node.kind === 'AliasNode') return tableName(n.node as OperationNode)
  if (node.kind === 'TableNode') {
    const id = (n.table as { identifier: { name: string } }).identifier
    return id.name
  }
  return node.kind
}

/** `select requests`, `update nodes`, `select node_models,models`, ... */
export function describeStatement(node: RootOperationNode): string {
  const n = node as unknown as Record<string, unknown>
  const joins = ((n.joins as Array<{ table: OperationNode }> | undefined) ?? []).map((j) =>
    tableName(j.table),
  )
  const froms = (n.from as { froms?: OperationNode[] } | undefined)?.froms ?? []
  switch (node.kind) {
    case 'SelectQueryNode':
      return `select ${[...froms.map(tableName), ...joins].join(',')}`
    case 'UpdateQueryNode':
      return `update ${[tableName(n.table as OperationNode), ...joins].join(',')}`
    case 'InsertQueryNode':
      return `insert ${tableName(n.into as OperationNode)}`
    case 'DeleteQueryNode':
      return `delete ${froms.map(tableName).join(',')}`
    case 'RawNode':
      return `raw ${((n.sqlFragments as string[]) ?? []).join('?').trim().slice(0, 80)}`
    default:
      return node.kind
  }
}

export class DbFaults implements KyselyPlugin {
  private rules: Rule[] = []
  /** Statements failed, by description. */
  readonly failed = new Map<string, number>()
  /** Statements being delayed, by query id: how long, and their description. */
  private delayed = new WeakMap<object, number>()
  private describedBy = new WeakMap<object, string>()
  /** When (performance.now) each delayed statement's result was handed back, by description. */
  readonly released = new Map<string, number[]>()
  /** Statements a `delay` rule has taken so far (they ran; their results are on the way), by
   * description: a test waits for one before acting in the window it opens. */
  readonly delaying = new Map<string, number>()

  /** Puts the faults in front of the server's database (every part reads `database.db` per call). */
  static install(server: TestServer): DbFaults {
    const faults = new DbFaults()
    server.core.database.db = server.core.database.db.withPlugin(faults)
    return faults
  }

  /** Fails the next `times` statements matching `match` (all of them until `clear` by default). */
  fail(match: RegExp, times = Infinity): this {
    this.rules.push({ match, left: times })
    return this
  }

  /** Hands back the results of the next `times` statements matching `match` `ms` late (a slow
   * database or a busy connection); the statements themselves run as usual. */
  delay(match: RegExp, ms: number, times = 1): this {
    this.rules.push({ match, left: times, delayMs: ms })
    return this
  }

  /** No more faults, and the counts start again. */
  clear(): void {
    this.rules = []
    this.failed.clear()
    this.released.clear()
    this.delaying.clear()
  }

  /** How many statements matching `match` were failed so far. */
  count(match: RegExp): number {
    let n = 0
    for (const [what, times] of this.failed) if (match.test(what)) n += times
    return n
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const what = describeStatement(args.node)
    const rule = this.rules.find((r) => r.left > 0 && r.match.test(what))
    if (rule?.delayMs !== undefined) {
      rule.left--
      this.delayed.set(args.queryId, rule.delayMs)
      this.describedBy.set(args.queryId, what)
      this.delaying.set(what, (this.delaying.get(what) ?? 0) + 1)
    } else if (rule) {
      rule.left--
      this.failed.set(what, (this.failed.get(what) ?? 0) + 1)
      throw new Error(`injected database fault: ${what}`)
    }
    return args.node
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const ms = this.delayed.get(args.queryId)
    if (ms !== undefined) {
      await new Promise((r) => setTimeout(r, ms))
      const what = this.describedBy.get(args.queryId)!
      this.released.set(what, [...(this.released.get(what) ?? []), performance.now()])
    }
    return args.result
  }
}
