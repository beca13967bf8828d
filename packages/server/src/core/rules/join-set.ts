/**
 * @module The LEFT JOINs one query needs. The rule, the client filter, the owner check and the sort
 * share one set, so aliases never collide and each relation path is joined once. Subqueries
 * (back-relations, related list rules) get a child set with its own base alias and joins.
 */
import { sql, type RawBuilder } from 'kysely'

export class JoinSet {
  /** The alias of the scope's main table ("r" for the query's own table). */
  readonly alias: string
  private readonly counter: { n: number }
  private readonly joins = new Map<string, { alias: string; sql: RawBuilder<unknown> }>()

  constructor(alias = 'r', counter: { n: number } = { n: 0 }) {
    this.alias = alias
    this.counter = counter
  }

  /** A fresh alias, unique across this set, its parents and children. */
  nextAlias(prefix: string): string {
    this.counter.n += 1
    return `${prefix}${this.counter.n}`
  }

  /** A set for a subquery whose main table is aliased `alias`. */
  child(alias: string): JoinSet {
    return new JoinSet(alias, this.counter)
  }

  /**
   * The alias joined under `key`, adding the join the first time. `build` may add joins of its own
   * (an owner check in the ON clause); those are emitted first, as this one refers to them.
   */
  join(key: string, prefix: string, build: (alias: string) => RawBuilder<unknown>): string {
    const existing = this.joins.get(key)
    if (existing) return existing.alias
    const alias = this.nextAlias(prefix)
    const joinSql = build(alias)
    this.joins.set(key, { alias, sql: joinSql })
    return alias
  }

  /** All joins, in dependency order, or an empty fragment. */
  sql(): RawBuilder<unknown> {
    if (this.joins.size === 0) return sql``
    return sql.join(
      [...this.joins.values()].map((j) => j.sql),
      sql` `,
    )
  }
}
