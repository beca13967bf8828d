const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'

/**
 * A new record id in PocketBase's form (15 of a-z and 0-9), from the browser's secure random
 * source. Bytes past the largest multiple of 36 are drawn again, so every character is as likely.
 */
export function newRecordId(): string {
  let id = ''
  while (id.length < 15) {
    for (const byte of crypto.getRandomValues(new Uint8Array(16))) {
      if (byte < 252 && id.length < 15) id += ALPHABET[byte % 36]
    }
  }
  return id
}
