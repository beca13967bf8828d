import { describe, expect, it } from 'vitest'
import { SpotCheckGate, type GateOptions } from './spot-check-gate.ts'

/** A gate whose draws come from `draws` in turn and whose clock is `clock.now`. */
function gate(draws: number[], options: Partial<GateOptions> = {}) {
  const clock = { now: 0 }
  const g = new SpotCheckGate(
    {
      probationRate: 0.25,
      verifiedRate: 0.03,
      minGapMs: 30_000,
      maxInFlight: 2,
      random: () => draws.shift() ?? 0,
      ...options,
    },
    () => clock.now,
  )
  return { g, clock }
}

describe('which answers a spot check starts on', () => {
  it('checks a probation node at its rate and a verified one at its own', () => {
    const { g } = gate([0.2, 0.2, 0.02, 0.3])
    expect(g.admit('a')).toBe(0.2)
    expect(g.drawn('a', 0.2, 'probation')).toBe(true)
    g.release('a')
    // 0.2 is under the probation rate but over the verified one: admitted, then not drawn.
    expect(g.admit('b')).toBe(0.2)
    expect(g.drawn('b', 0.2, 'verified')).toBe(false)
    g.release('b')
    expect(g.admit('b')).toBe(0.02)
    expect(g.drawn('b', 0.02, 'verified')).toBe(true)
    g.release('b')
    // Above both rates: nothing.
    expect(g.admit('c')).toBeNull()
  })

  it('one check per node at a time, and at most maxInFlight at once', () => {
    const { g } = gate([0, 0, 0, 0, 0])
    expect(g.admit('a')).not.toBeNull()
    expect(g.admit('a')).toBeNull()
    expect(g.admit('b')).not.toBeNull()
    expect(g.admit('c')).toBeNull()
    g.release('a')
    expect(g.admit('c')).not.toBeNull()
  })

  it("a minimum gap between a node's checks, counted from checks that went to a reference", () => {
    const { g, clock } = gate(Array(10).fill(0))
    g.admit('a')
    g.drawn('a', 0, 'probation')
    g.release('a')
    clock.now = 29_999
    expect(g.admit('a')).toBeNull()
    expect(g.admit('b')).not.toBeNull()
    // b's draw came to nothing (verified, over its rate): no gap for b.
    g.drawn('b', 0.1, 'verified')
    g.release('b')
    expect(g.admit('b')).not.toBeNull()
    g.release('b')
    clock.now = 30_000
    expect(g.admit('a')).not.toBeNull()
  })

  it('checks nothing at rates 0', () => {
    const { g } = gate([0, 0], { probationRate: 0, verifiedRate: 0 })
    expect(g.admit('a')).toBeNull()
  })
})
