/**
 * @module Record rules and filters: the bridge between the generic filter language and Meshwork's
 * collections.
 */
export * from './record-query.ts'
