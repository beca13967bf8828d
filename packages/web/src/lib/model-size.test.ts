import { describe, expect, it } from 'vitest'
import { catalogueSize, formatModelSize } from './model-size.ts'

describe('a catalogue model size', () => {
  it('is the pinned file size when there is one, whatever the model card said', () => {
    expect(catalogueSize({ file_size_bytes: 4_683_073_952, approx_size_bytes: 4.68e9 })).toEqual({
      bytes: 4_683_073_952,
      approximate: false,
    })
  })

  it("is the model card's figure, marked approximate, until the size is pinned", () => {
    const size = catalogueSize({ file_size_bytes: 0, approx_size_bytes: 4.68e9 })
    expect(size).toEqual({ bytes: 4.68e9, approximate: true })
    expect(formatModelSize(size!)).toBe('about 4.4 GB')
  })

  it('is unknown when neither is set', () => {
    expect(catalogueSize({ file_size_bytes: 0, approx_size_bytes: 0 })).toBeNull()
    expect(catalogueSize({})).toBeNull()
  })

  it('reads a pinned size without "about"', () => {
    expect(formatModelSize({ bytes: 1_750_560, approximate: false })).toBe('1.7 MB')
  })
})
