import { describe, expect, it } from 'vitest'
import { AnswerMeter } from './answer-meter.ts'
import { UNCALIBRATED } from './calibration.ts'

const rule = { tokenizer: null, bytes: UNCALIBRATED }

describe("an answer held to the caller's stop sequences", () => {
  it('ends before the first stop, found across chunks, and counts nothing after it', () => {
    const meter = new AnswerMeter(100, rule, ['\nObservation:', 'END'])
    meter.push('Once', [1])
    meter.push(' upon\nObserv', [2, 3])
    // What could still begin a stop is not shown yet.
    expect(meter.shown).toBe('Once upon')
    meter.push('ation: the node went on', [4, 5])
    meter.push(' and on', [6])
    expect(meter.text).toBe('Once upon')
    expect(meter.shown).toBe('Once upon')
    const answer = meter.finish(6)
    expect(answer).toMatchObject({ text: 'Once upon', cut: true, nodeIds: null, idsMatch: null })
    // Billed from what stands: at most its bytes, never the node's claim for the whole text.
    expect(answer.tokensOutput).toBeLessThanOrEqual(Buffer.byteLength('Once upon'))
  })

  it('shows an end that turned out not to begin a stop, and is not cut without stops', () => {
    const meter = new AnswerMeter(100, rule, ['\nObservation:'])
    meter.push('a\nObs')
    expect(meter.shown).toBe('a')
    meter.push('cure')
    expect(meter.shown).toBe('a\nObscure')
    expect(meter.finish(null)).toMatchObject({ text: 'a\nObscure', cut: false })
    const plain = new AnswerMeter(100, rule)
    plain.push('a\nObservation: b')
    expect(plain.shown).toBe('a\nObservation: b')
    expect(plain.finish(null).cut).toBe(false)
  })
})
