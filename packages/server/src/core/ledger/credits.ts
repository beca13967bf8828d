/**
 * @module Exact credits. The ledger stores and computes every amount as an integer count of
 * thousandths of a credit ("units"), and a model's multiplier as thousandths too, so a request's
 * cost `tokens × multiplier` is the integer `tokens × multiplierUnits` units: no rounding anywhere.
 * The records API divides by `CREDIT_SCALE` on the way out (collections declare `scale`), so clients
 * still see `balance: 1000`, `amount: 12.5`, `credit_multiplier: 1.5`.
 */

/** Units per credit; also the multiplier's units per 1×. */
export const CREDIT_SCALE = 1000

/** Credits (a JS number from the API, the CLI or the config) as exact units; RangeError when the
 * value is not finite or finer than a thousandth (never silently rounded). */
export function toUnits(credits: number): number {
  if (!Number.isFinite(credits)) throw new RangeError(`Not a number of credits: ${credits}`)
  const exact = credits * CREDIT_SCALE
  const units = Math.round(exact)
  if (Math.abs(exact - units) > Math.abs(exact) * 1e-12 + 1e-9 || !Number.isSafeInteger(units)) {
    throw new RangeError(`Credits have at most 3 decimal places: ${credits}`)
  }
  return units
}

/** Units as the credits the API shows (the nearest double of an exact decimal). */
export function fromUnits(units: number): number {
  return units / CREDIT_SCALE
}

/** Throws unless `units` is a safe integer (the ledger's amounts always are). */
export function assertUnits(units: number, what = 'amount'): number {
  if (!Number.isSafeInteger(units))
    throw new RangeError(`The ledger's ${what} must be integer units: ${units}`)
  return units
}

/** Cost of a request in units: (input + output tokens) × the multiplier, exactly. */
export function requestCostUnits(
  tokensInput: number,
  tokensOutput: number,
  multiplierUnits: number,
): number {
  return assertUnits((tokensInput + tokensOutput) * multiplierUnits, 'cost')
}

/**
 * Units as the web app shows a balance (`toLocaleString` with no fraction digits: half away from
 * zero), so a message about credits reads the same number as the chat footer.
 */
export function formatCreditsLikeFooter(units: number): string {
  const sign = units < 0 ? '-' : ''
  const abs = Math.abs(units)
  const whole = Math.floor(abs / CREDIT_SCALE) + (abs % CREDIT_SCALE >= CREDIT_SCALE / 2 ? 1 : 0)
  return sign + whole.toLocaleString('en-US')
}

/** Units rounded up to whole credits: "at least N needed" never understates what is needed. */
export function formatCreditsCeil(units: number): string {
  return Math.ceil(units / CREDIT_SCALE).toLocaleString('en-US')
}
