/** @module The sizes every chat request is held to. */

/** Spec section 9: a request's context_length. */
export const CONTEXT_LENGTH = 8000
export const MAX_OUTPUT_TOKENS = 256
/** A send that cannot pay for this many output tokens is refused before any node works. */
export const MIN_OUTPUT_TOKENS = 16
