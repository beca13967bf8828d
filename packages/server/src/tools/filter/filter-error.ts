/**
 * @module The one error the filter language throws. Its message is shown to API users (400, or 403
 * when `forbidden`), so it names the problem in plain words and never carries SQL.
 */

export class FilterError extends Error {
  /** True when the expression is valid but the caller may not use it (a 403, not a 400). */
  readonly forbidden: boolean

  constructor(message: string, options: { forbidden?: boolean } = {}) {
    super(message)
    this.name = 'FilterError'
    this.forbidden = options.forbidden ?? false
  }
}

/** A 400-style error with the house prefix: `Invalid filter: unknown field "foo".` */
export function invalidFilter(detail: string): FilterError {
  return new FilterError(`Invalid filter: ${detail}.`)
}

export function invalidSort(detail: string): FilterError {
  return new FilterError(`Invalid sort: ${detail}.`)
}
