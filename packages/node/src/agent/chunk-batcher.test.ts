import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ChunkBatcher } from './chunk-batcher.ts'

describe('ChunkBatcher', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('sends the first piece at once and coalesces the rest per interval', () => {
    const sent: string[] = []
    const batcher = new ChunkBatcher((t) => sent.push(t), 30)
    batcher.push('Once')
    expect(sent).toEqual(['Once'])
    batcher.push(' upon')
    batcher.push(' a')
    expect(sent).toEqual(['Once'])
    vi.advanceTimersByTime(29)
    expect(sent).toEqual(['Once'])
    vi.advanceTimersByTime(1)
    expect(sent).toEqual(['Once', ' upon a'])
    batcher.push(' time')
    batcher.flush()
    expect(sent).toEqual(['Once', ' upon a', ' time'])
  })

  it('sends a piece at once when the last frame left an interval ago (a model slower than the interval)', () => {
    const sent: string[] = []
    const batcher = new ChunkBatcher((t) => sent.push(t), 30)
    batcher.push('Once')
    vi.advanceTimersByTime(33) // 30 tokens/s
    batcher.push(' upon')
    expect(sent).toEqual(['Once', ' upon'])
    vi.advanceTimersByTime(10)
    batcher.push(' a')
    expect(sent).toEqual(['Once', ' upon'])
    vi.advanceTimersByTime(20)
    expect(sent).toEqual(['Once', ' upon', ' a'])
  })

  it('holds ids without text for text to go with them, and sends the first text at once', () => {
    const sent: Array<[string, number[] | undefined]> = []
    const batcher = new ChunkBatcher((t, ids) => sent.push([t, ids]), 30)
    batcher.push('', [240]) // the first bytes of a character
    expect(sent).toEqual([])
    vi.advanceTimersByTime(5)
    batcher.push('é', [169])
    expect(sent).toEqual([['é', [240, 169]]])
    vi.advanceTimersByTime(100)
    expect(sent).toHaveLength(1)
  })

  it('drops pending text when discarded and ignores empty pieces', () => {
    const sent: string[] = []
    const batcher = new ChunkBatcher((t) => sent.push(t), 10)
    batcher.push('')
    batcher.push('a')
    batcher.push('b')
    batcher.discard()
    vi.advanceTimersByTime(100)
    expect(sent).toEqual(['a'])
  })
})

describe('ChunkBatcher with token ids', () => {
  it('sends the ids of each batch with its text, and ids whose text is held back on flush', () => {
    const sent: Array<[string, number[] | undefined]> = []
    const batcher = new ChunkBatcher((t, ids) => sent.push([t, ids]), 1000)
    batcher.push('Once', [10])
    batcher.push(' upon', [11])
    batcher.push(' a', [12, 13])
    batcher.flush()
    expect(sent).toEqual([
      ['Once', [10]],
      [' upon a', [11, 12, 13]],
    ])
  })

  it('leaves ids out for engines that give none', () => {
    const sent: Array<[string, number[] | undefined]> = []
    const batcher = new ChunkBatcher((t, ids) => sent.push([t, ids]), 1000)
    batcher.push('a')
    batcher.push('b')
    batcher.flush()
    expect(sent).toEqual([
      ['a', undefined],
      ['b', undefined],
    ])
  })
})
