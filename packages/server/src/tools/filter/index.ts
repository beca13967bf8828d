/**
 * @module The PocketBase filter language, independent of any collection: parse filter and sort
 * text, compile to SQL through a field resolver, or evaluate in memory through a value resolver.
 */
export { FilterError, invalidFilter, invalidSort } from './filter-error.ts'
export * from './parser.ts'
export * from './compile.ts'
export * from './evaluate.ts'
export * from './values.ts'
export { resolveMacro } from './macros.ts'
