import { describe, expect, it } from 'vitest'
import { newRecordId } from './record-id.ts'

describe('newRecordId', () => {
  it('is 15 of a-z and 0-9 (a PocketBase record id; sends use one as their idempotency key)', () => {
    for (let i = 0; i < 1000; i++) expect(newRecordId()).toMatch(/^[a-z0-9]{15}$/)
  })

  it('does not repeat, and uses every character', () => {
    const ids = Array.from({ length: 2000 }, newRecordId)
    expect(new Set(ids).size).toBe(ids.length)
    expect(new Set(ids.join('')).size).toBe(36)
  })
})
