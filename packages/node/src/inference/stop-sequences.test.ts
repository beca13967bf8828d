import { describe, expect, it } from 'vitest'
import { StopSequenceFilter } from './stop-sequences.ts'

function run(stops: string[], pieces: string[]) {
  const out: string[] = []
  const f = new StopSequenceFilter(stops, (t) => out.push(t))
  for (const p of pieces) f.push(p)
  f.flush()
  return { text: out.join(''), out, stopped: f.stopped }
}

describe('StopSequenceFilter', () => {
  it('ends before the first stop sequence, across pieces, leaving it out', () => {
    expect(run([' Sam'], ['Okay,', ' S', 'am! More'])).toEqual({
      text: 'Okay,',
      out: ['Okay,'],
      stopped: true,
    })
    expect(run(['END', 'b'], ['aaEN', 'Dbb'])).toMatchObject({ text: 'aa', stopped: true })
    // The earliest of several stops wins, whichever is listed first.
    expect(run(['zz', 'y'], ['xxyzz'])).toMatchObject({ text: 'xx', stopped: true })
  })

  it('holds back only what could begin a stop sequence and sends it once it cannot', () => {
    const r = run(['\nUser:'], ['Hello', '\nUs', 'ed to it'])
    expect(r).toMatchObject({ text: 'Hello\nUsed to it', stopped: false })
    expect(r.out[0]).toBe('Hello')
  })

  it('sends what was held back when the answer ends without a stop', () => {
    expect(run(['abc'], ['xxab'])).toMatchObject({ text: 'xxab', stopped: false })
  })

  it('drops text after the stop and a stop at the very start leaves nothing', () => {
    expect(run(['.'], ['.', 'more'])).toEqual({ text: '', out: [], stopped: true })
  })
})
