import { describe, expect, it } from 'vitest'
import { waitUntil } from './wait-until.ts'

describe('waitUntil', () => {
  it('returns the first truthy value the check gives', async () => {
    let calls = 0
    const value = await waitUntil(() => (++calls >= 3 ? { calls } : null), 5_000)
    expect(value).toEqual({ calls: 3 })
  })

  it('names what it waited for when time runs out', async () => {
    await expect(waitUntil(() => false, 60, 'the node to serve')).rejects.toThrow(
      'Timed out waiting for the node to serve',
    )
  })
})
