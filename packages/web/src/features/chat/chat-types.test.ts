import { describe, expect, it } from 'vitest'
import { isTerminal, nodeCountLabel, toChatModel } from './chat-types.ts'
import { typedLength, TYPING_MS_PER_CHAR } from './use-typewriter.ts'

describe('toChatModel', () => {
  it('applies the defaults of spec §3', () => {
    expect(toChatModel({ id: 'm1', name: 'tiny', node_count: 0 })).toEqual({
      id: 'm1',
      name: 'tiny',
      description: 'AI model: tiny',
      creditMultiplier: 1,
      nodeCount: 0,
      isAvailable: false,
    })
  })
  it('prefers display_name and marks models with nodes available', () => {
    const m = toChatModel({
      id: 'm2',
      name: 'x',
      display_name: 'Big X',
      description: 'd',
      credit_multiplier: 2.5,
      node_count: 3,
    })
    expect(m).toMatchObject({
      name: 'Big X',
      description: 'd',
      creditMultiplier: 2.5,
      nodeCount: 3,
      isAvailable: true,
    })
  })
})

describe('chat labels and states', () => {
  it('uses singular and plural node labels', () => {
    expect(nodeCountLabel(0)).toBe('0 nodes')
    expect(nodeCountLabel(1)).toBe('1 node')
    expect(nodeCountLabel(2)).toBe('2 nodes')
  })
  it('ends streams on completed and failed only', () => {
    expect(isTerminal('completed')).toBe(true)
    expect(isTerminal('failed')).toBe(true)
    expect(isTerminal('pending')).toBe(false)
    expect(isTerminal('processing')).toBe(false)
  })
  it('types 5 ms per character', () => {
    expect(TYPING_MS_PER_CHAR).toBe(5)
    expect(typedLength(0, 50, 100)).toBe(10)
    expect(typedLength(10, 4, 100)).toBe(10)
    expect(typedLength(90, 1000, 100)).toBe(100)
  })
})
