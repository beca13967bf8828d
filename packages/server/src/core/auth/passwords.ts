import { hash, verify } from '@node-rs/argon2'

/** argon2id with the library's defaults (memory-hard, ~tens of ms per hash). */
export function hashPassword(password: string): Promise<string> {
  return hash(password)
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  if (!stored) return false
  try {
    return await verify(stored, password)
  } catch {
    return false
  }
}

// A real hash of a random password: checking unknown identities against it keeps login timing uniform.
let dummyHash: Promise<string> | undefined
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hashPassword('dummy-password-for-uniform-timing')
  return dummyHash
}
