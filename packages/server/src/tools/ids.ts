import { randomBytes } from 'node:crypto'

const lowerAlnum = 'abcdefghijklmnopqrstuvwxyz0123456789'
const mixedAlnum = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** Random string over `alphabet`; rejection sampling keeps every character equally likely. */
export function randomString(length: number, alphabet = mixedAlnum): string {
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length]
      if (out.length === length) break
    }
  }
  return out
}

/** A PocketBase record id: 15 characters of [a-z0-9]. */
export function newRecordId(): string {
  return randomString(15, lowerAlnum)
}

export const recordIdPattern = /^[a-z0-9]{15}$/
