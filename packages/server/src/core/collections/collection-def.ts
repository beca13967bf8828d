/**
 * @module Declares how a collection looks: its fields, API rules and privacy. Collections are
 * declared in code (no admin UI), so these types are the single source of truth for the records
 * engine, the filter resolver and the migrations.
 */

export type FieldType =
  | 'text'
  | 'email'
  | 'password'
  | 'number'
  | 'bool'
  | 'date'
  | 'autodate'
  | 'relation'
  | 'select'
  | 'json'

export interface FieldDef {
  name: string
  type: FieldType
  /** Cannot be blank on create/update (PocketBase's `required`). */
  required?: boolean
  /** relation: the target collection's name. */
  collection?: string
  /** relation: deleting the target deletes this record too. */
  cascadeDelete?: boolean
  /** select: the allowed values. */
  values?: string[]
  /** number: stored as an exact integer count of 1/scale units (credits: 1000, thousandths).
   * The API, filters, sorts and rules see `stored / scale`; a written value must be exact at that
   * precision. Money never touches floating point in the database or the ledger's arithmetic. */
  scale?: number
  /** text: min/max length; number: min/max value. */
  min?: number
  max?: number
  /** Never in any API output and never filterable by clients (password hashes, token keys). */
  hidden?: boolean
  /** Written only by the server: silently ignored in client create/update bodies. */
  system?: boolean
  /** Set on create, then fixed: silently ignored in client update bodies. */
  immutable?: boolean
  /** Readable only when the collection's ownerRule holds for the caller; otherwise left out of
   * the JSON and resolved as NULL in client filters and sorts, so it can't leak through them. */
  private?: boolean
  /** Value used when a create body leaves the field out. */
  default?: string | number | boolean | null
  /** autodate: set on create and/or update. */
  onCreate?: boolean
  onUpdate?: boolean
}

/** An API rule: null = locked (server only), '' = everyone, otherwise a filter expression. */
export type Rule = string | null

export interface CollectionDef {
  id: string
  name: string
  type: 'base' | 'auth' | 'view'
  fields: FieldDef[]
  listRule: Rule
  viewRule: Rule
  createRule: Rule
  updateRule: Rule
  deleteRule: Rule
  /** Filter expression that holds when the caller owns the record; gates `private` fields. */
  ownerRule?: string
  /** A relation to users that create fills from the caller's auth when the body leaves it out. */
  ownerField?: string
}
