import { describe, expect, it } from 'vitest'
import type { NodeModelRecord } from '../../lib/node-records.ts'
import {
  activeToggleState,
  canDeleteModel,
  hasServingModel,
  memoryFit,
  mergeModelEntries,
  nodeModelPhase,
  parseDownloadPercent,
} from './node-model-state.ts'

const rec = (over: Partial<NodeModelRecord>): NodeModelRecord => ({
  id: 'nm',
  node: 'n1',
  model: 'm1',
  requested_download: false,
  requested_serving: false,
  is_downloaded: false,
  is_serving: false,
  tokens_per_second: 0,
  download_progress: '',
  error_message: '',
  ...over,
})

describe('nodeModelPhase', () => {
  it('walks not downloaded -> downloading -> downloaded -> serving', () => {
    expect(nodeModelPhase(undefined)).toBe('not-downloaded')
    expect(nodeModelPhase(rec({ requested_download: true }))).toBe('downloading')
    expect(nodeModelPhase(rec({ requested_download: true, is_downloaded: true }))).toBe(
      'downloaded',
    )
    expect(
      nodeModelPhase(rec({ is_downloaded: true, requested_serving: true, is_serving: true })),
    ).toBe('serving')
  })
  it('treats a cancelled download as not downloaded', () => {
    expect(nodeModelPhase(rec({ requested_download: false, download_progress: '40' }))).toBe(
      'not-downloaded',
    )
  })
  it('is a failed download once the node reported why', () => {
    expect(nodeModelPhase(rec({ requested_download: true, error_message: 'HTTP 502' }))).toBe(
      'download-failed',
    )
    expect(
      nodeModelPhase(rec({ requested_download: true, is_downloaded: true, error_message: 'x' })),
    ).toBe('downloaded')
  })
  it('stays downloaded while serving is requested but not yet on', () => {
    expect(nodeModelPhase(rec({ is_downloaded: true, requested_serving: true }))).toBe('downloaded')
  })
})

describe('canDeleteModel', () => {
  it('only when downloaded and not serving', () => {
    expect(canDeleteModel(rec({ is_downloaded: true }))).toBe(true)
    expect(canDeleteModel(rec({ is_downloaded: true, is_serving: true }))).toBe(false)
    expect(canDeleteModel(rec({ requested_download: true }))).toBe(false)
    expect(canDeleteModel(undefined)).toBe(false)
  })
})

describe('parseDownloadPercent', () => {
  it('parses the string number as a percent', () => {
    expect(parseDownloadPercent('42.5')).toBe(42.5)
    expect(parseDownloadPercent('100')).toBe(100)
    expect(parseDownloadPercent(7)).toBe(7)
  })
  it('reads garbage as 0 and clamps', () => {
    expect(parseDownloadPercent('')).toBe(0)
    expect(parseDownloadPercent('abc')).toBe(0)
    expect(parseDownloadPercent(undefined)).toBe(0)
    expect(parseDownloadPercent('130')).toBe(100)
    expect(parseDownloadPercent('-3')).toBe(0)
  })
})

describe('mergeModelEntries', () => {
  it('lists every catalogue model with its record, plus orphans at the end', () => {
    const catalogue = [
      { id: 'm1', name: 'a' },
      { id: 'm2', name: 'b' },
    ]
    const r1 = rec({ id: 'x', model: 'm2' })
    const orphan = rec({ id: 'y', model: 'm9', expand: { model: { id: 'm9', name: 'old' } } })
    const entries = mergeModelEntries(catalogue, [r1, orphan])
    expect(entries.map((e) => [e.model.id, e.record?.id])).toEqual([
      ['m1', undefined],
      ['m2', 'x'],
      ['m9', 'y'],
    ])
  })
})

describe('active toggle rules', () => {
  it('cannot be switched on with nothing serving, and warns', () => {
    expect(activeToggleState(false, false)).toEqual({
      disabled: true,
      warning: true,
      danger: false,
    })
  })
  it('is red when active but nothing serving, and can still be turned off', () => {
    expect(activeToggleState(true, false)).toEqual({ disabled: false, warning: true, danger: true })
  })
  it('is free when a model serves', () => {
    expect(activeToggleState(false, true)).toEqual({
      disabled: false,
      warning: false,
      danger: false,
    })
    expect(hasServingModel([rec({ is_serving: true })])).toBe(true)
    expect(hasServingModel([rec({})])).toBe(false)
  })
})

describe('memoryFit', () => {
  const GiB = 1024 ** 3
  it('compares the model plus its working memory with RAM, or VRAM where reported', () => {
    const qwen7b = 4.68 * GiB
    expect(memoryFit(qwen7b, { memory_bytes: 4 * GiB })).toEqual({
      fits: false,
      needBytes: Math.round(qwen7b * 1.2 + 0.5 * GiB),
      ramBytes: 4 * GiB,
      vramBytes: null,
    })
    expect(memoryFit(qwen7b, { memory_bytes: 16 * GiB })?.fits).toBe(true)
    expect(memoryFit(qwen7b, { memory_bytes: 4 * GiB, vram_bytes: 8 * GiB })?.fits).toBe(true)
    expect(memoryFit(0.4 * GiB, { memory_bytes: 1 * GiB })?.fits).toBe(true)
  })
  it('is unknown without a size or a hardware report', () => {
    expect(memoryFit(0, { memory_bytes: GiB })).toBeNull()
    expect(memoryFit(GiB, null)).toBeNull()
    expect(memoryFit(GiB, { gpu: null })).toBeNull()
  })
})
