import { describe, expect, it } from 'vitest'
import type { NodeRegistry } from '../nodes/node-registry.ts'
import type { NodeHandle } from '../nodes/node-session.ts'
import { chooseNode, type CandidateRow, type PickOptions } from './pick-node.ts'

function handle(nodeId: string, { free = 1, jobs = 0, open = true } = {}): NodeHandle {
  return {
    nodeId,
    open,
    helloed: true,
    freeSlots: free,
    jobs: new Set(Array.from({ length: jobs }, (_, i) => `job${i}`)),
    fullUntil: 0,
    send: () => true,
  }
}
const registryOf = (handles: NodeHandle[]) =>
  ({ get: (id: string) => handles.find((h) => h.nodeId === id) }) as unknown as NodeRegistry
const row = (id: string, over: Partial<CandidateRow> = {}): CandidateRow => ({
  id,
  owner: `owner-${id}`,
  reputation: 5,
  speed: 100,
  probation: false,
  storedOnline: true,
  ...over,
})
const options = (over: Partial<PickOptions> = {}): PickOptions => ({
  excludeNodes: new Set(),
  excludeOwners: new Set(),
  probationShare: 0,
  random: () => 0.5,
  ...over,
})

describe('choosing the node for a request', () => {
  it('takes the best reputation, then the fastest, then the least loaded, then the first', () => {
    const rows = [
      row('a', { reputation: 4, speed: 500 }),
      row('b', { speed: 90 }),
      row('c', { speed: 120 }),
      row('d', { speed: 120 }),
      row('e', { speed: 120 }),
    ]
    const reg = registryOf([
      handle('a'),
      handle('b'),
      handle('c', { jobs: 2 }),
      handle('d', { jobs: 1 }),
      handle('e', { jobs: 1 }),
    ])
    expect(chooseNode(rows, reg, options()).node?.nodeId).toBe('d')
  })

  it('skips full, closed, excluded nodes and excluded owners, and says whether any could serve', () => {
    const rows = [
      row('full'),
      row('closed'),
      row('tried'),
      row('owner'),
      row('free', { reputation: 1 }),
    ]
    const reg = registryOf([
      handle('full', { free: 0 }),
      handle('closed', { open: false }),
      handle('tried'),
      handle('owner'),
      handle('free'),
    ])
    const opts = options({
      excludeNodes: new Set(['tried']),
      excludeOwners: new Set(['owner-owner']),
    })
    expect(chooseNode(rows, reg, opts)).toMatchObject({ owner: 'owner-free', anyEligible: true })
    const busy = chooseNode([row('full')], reg, options())
    expect(busy).toMatchObject({ node: null, anyEligible: true })
    expect(chooseNode([row('closed')], reg, options())).toMatchObject({
      node: null,
      anyEligible: false,
    })
  })

  it('says when a node that could serve is between connections (stored, but no open socket here)', () => {
    const reg = registryOf([handle('closed', { open: false })])
    expect(chooseNode([row('closed'), row('gone')], reg, options())).toMatchObject({
      node: null,
      anyEligible: false,
      anyAway: true,
    })
    // One that already tried the request, or whose owner's node did, is not waited for.
    const tried = options({
      excludeNodes: new Set(['gone']),
      excludeOwners: new Set(['owner-closed']),
    })
    expect(chooseNode([row('closed'), row('gone')], reg, tried)).toMatchObject({ anyAway: false })
    // Nor one stored offline: its process saw it go.
    const offline = row('gone', { storedOnline: false })
    expect(chooseNode([offline], reg, options())).toMatchObject({ anyAway: false })
  })

  it('gives nodes on probation their share, and all of it when no verified node is free', () => {
    const rows = [
      row('verified', { reputation: 1 }),
      row('new', { probation: true, reputation: 9 }),
    ]
    const reg = registryOf([handle('verified'), handle('new')])
    const share = { probationShare: 0.2 }
    expect(chooseNode(rows, reg, options({ ...share, random: () => 0.1 })).node?.nodeId).toBe('new')
    expect(chooseNode(rows, reg, options({ ...share, random: () => 0.3 })).node?.nodeId).toBe(
      'verified',
    )
    const onlyNew = registryOf([handle('verified', { free: 0 }), handle('new')])
    expect(chooseNode(rows, onlyNew, options()).node?.nodeId).toBe('new')
  })
})
