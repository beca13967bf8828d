import { describe, expect, it } from 'vitest'
import {
  axisTicks,
  averageResponseMs,
  formatMs,
  formatPercent,
  hourlyBuckets,
  jobSeries,
  requestSeries,
  requestsInWindow,
  successRate,
} from './network-metrics.ts'

// Local time so that bucket labels do not depend on the machine's zone.
const now = new Date(2026, 10, 22, 15, 40, 0)
const at = (h: number, m = 0) => new Date(2026, 10, 22, h, m).toISOString().replace('T', ' ')

describe('hourlyBuckets', () => {
  it('gives the last 24 whole hours, oldest first, ending with the current hour', () => {
    const buckets = hourlyBuckets(now)
    expect(buckets).toHaveLength(24)
    expect(buckets[23].label).toBe('15:00')
    expect(buckets[0].label).toBe('16:00')
    expect(buckets[23].start).toBe(new Date(2026, 10, 22, 15).getTime())
    expect(buckets[23].start - buckets[0].start).toBe(23 * 3600e3)
  })
})

describe('requestSeries', () => {
  it('counts statuses per hour and ignores requests outside the window', () => {
    const series = requestSeries(
      [
        { status: 'completed', created: at(15, 5), processing_time_ms: 100 },
        { status: 'completed', created: at(15, 30), processing_time_ms: 301 },
        { status: 'failed', created: at(15, 31) },
        { status: 'pending', created: at(14, 59) },
        { status: 'processing', created: at(14, 0) },
        { status: 'completed', created: new Date(2026, 10, 21, 15, 59).toISOString() },
      ],
      now,
    )
    const last = series[23]
    expect(last).toEqual({
      label: '15:00',
      completed: 2,
      processing: 0,
      pending: 0,
      total: 3,
      successRate: 66.7,
      avgResponseMs: 201,
    })
    expect(series[22]).toMatchObject({
      pending: 1,
      processing: 1,
      completed: 0,
      successRate: 0,
      avgResponseMs: null,
    })
    expect(series[0]).toMatchObject({ total: 0, successRate: null, avgResponseMs: null })
    expect(series.reduce((n, p) => n + p.total, 0)).toBe(5)
  })
})

describe('success rate and response time', () => {
  it('success rate is completed / all as a percent', () => {
    expect(successRate([])).toBe(0)
    expect(
      successRate([
        { status: 'completed', created: '' },
        { status: 'failed', created: '' },
        { status: 'cancelled', created: '' },
        { status: 'completed', created: '' },
      ]),
    ).toBe(50)
  })
  it('average response is the mean processing time of completed requests only', () => {
    expect(
      averageResponseMs([
        { status: 'completed', created: '', processing_time_ms: 1000 },
        { status: 'completed', created: '', processing_time_ms: 2000 },
        { status: 'failed', created: '', processing_time_ms: 9000 },
      ]),
    ).toBe(1500)
    expect(averageResponseMs([{ status: 'failed', created: '', processing_time_ms: 5 }])).toBe(0)
  })
  it('formats 1 decimal percent and 0 decimal ms with locale grouping', () => {
    expect(formatPercent(66.666)).toBe(
      (66.7).toLocaleString(undefined, { minimumFractionDigits: 1 }) + '%',
    )
    expect(formatPercent(100)).toMatch(/^100[.,]0%$/)
    expect(formatMs(1234.6)).toBe(`${(1235).toLocaleString()} ms`)
  })
  it('keeps only requests of the window', () => {
    const inside = { status: 'completed', created: at(3) }
    const outside = { status: 'completed', created: new Date(2026, 10, 20).toISOString() }
    expect(requestsInWindow([inside, outside], now)).toEqual([inside])
  })
})

describe('jobSeries', () => {
  it('counts pending and acknowledged (acked or completed) jobs per hour', () => {
    const series = jobSeries(
      [
        { status: 'pending', created: at(15, 1) },
        { status: 'acked', created: at(15, 2) },
        { status: 'completed', created: at(10, 2) },
        { status: 'failed', created: at(10, 3) },
        { status: 'acked', created: 'not a date' },
      ],
      now,
    )
    expect(series[23]).toEqual({ label: '15:00', pending: 1, acked: 1 })
    expect(series[18]).toEqual({ label: '10:00', pending: 0, acked: 1 })
  })
})

describe('axisTicks', () => {
  it('labels every 3rd (or 6th) clock hour, evenly spaced across the 24 buckets', () => {
    const labels = hourlyBuckets(now).map((b) => b.label)
    const ticks = axisTicks(labels, 3)
    expect(ticks).toEqual(['18:00', '21:00', '00:00', '03:00', '06:00', '09:00', '12:00', '15:00'])
    const positions = ticks.map((t) => labels.indexOf(t))
    const gaps = positions.slice(1).map((p, i) => p - positions[i])
    expect(new Set(gaps)).toEqual(new Set([3]))
    expect(axisTicks(labels, 6)).toEqual(['18:00', '00:00', '06:00', '12:00'])
  })
})
