/**
 * The relay between two coordinator processes, here two relays on one in-process bus (the Redis
 * one is exercised end to end in test/scale-out.test.ts).
 */
import type { WebSocket } from 'ws'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { ServerToNodeFrame } from '@meshwork/protocol'
import { MemoryBus } from '../../tools/bus/memory-bus.ts'
import { NodeRelay, type LocalNodes } from './node-relay.ts'
import { NodeSession, type JobFrame } from './node-registry.ts'

function fakeSocket() {
  const sent: ServerToNodeFrame[] = []
  const ws = { readyState: 1, send: (text: string) => sent.push(JSON.parse(text)) }
  return { ws: ws as unknown as WebSocket, sent }
}

/** One process: its local sessions and what its scheduler heard. */
function process(bus: MemoryBus, timeoutMs = 60_000) {
  const sessions = new Map<string, NodeSession>()
  const heard = { frames: [] as Array<[string, JobFrame]>, gone: [] as string[], capacity: 0 }
  const nodes: LocalNodes = {
    local: (id) => sessions.get(id),
    all: () => sessions.values(),
    onRemoteJobFrame: (id, frame) => heard.frames.push([id, frame]),
    onRemoteNodeGone: (id) => heard.gone.push(id),
    onRemoteCapacity: () => heard.capacity++,
    replaced: (session) => sessions.delete(session.nodeId),
  }
  const relay = new NodeRelay(bus, nodes, timeoutMs)
  const connect = (nodeId: string, maxJobs = 2) => {
    const socket = fakeSocket()
    const session = new NodeSession(nodeId, socket.ws)
    session.helloed = true
    session.maxJobs = maxJobs
    sessions.set(nodeId, session)
    relay.announce(session)
    return { session, sent: socket.sent }
  }
  return { relay, sessions, heard, connect }
}

const offer = (jobId: string): ServerToNodeFrame => ({
  type: 'job_offer',
  job_id: jobId,
  request_id: 'r1',
  model_id: 'm1',
  prompt: { messages: [{ role: 'user', content: 'hi' }] },
  sampling: {
    temperature: 0,
    top_p: 1,
    top_k: 40,
    repeat_penalty: 1,
    frequency_penalty: 0,
    presence_penalty: 0,
    max_tokens: 10,
    context_length: 100,
  },
})

describe('node relay', () => {
  const relays: NodeRelay[] = []
  afterEach(() => {
    relays.splice(0).forEach((r) => r.close())
    vi.useRealTimers()
  })
  const start = (bus: MemoryBus, timeoutMs?: number) => {
    const p = process(bus, timeoutMs)
    relays.push(p.relay)
    return p
  }

  it('shows a node announced by another process, and carries an offer there and its frames back', () => {
    const bus = new MemoryBus()
    const a = start(bus)
    const b = start(bus)
    const { session, sent } = b.connect('n1', 2)
    const remote = a.relay.remote('n1')!
    expect(remote).toMatchObject({ nodeId: 'n1', open: true, helloed: true, freeSlots: 2 })
    expect(a.heard.capacity).toBe(1)
    expect(b.relay.remote('n1')).toBeUndefined() // a process does not see its own nodes as remote

    remote.jobs.add('j1')
    expect(remote.send(offer('j1'))).toBe(true)
    expect(sent.map((f) => f.type)).toEqual(['job_offer'])
    expect(session.relayedJobs.has('j1')).toBe(true)
    expect(session.freeSlots).toBe(1)

    expect(b.relay.route(session, { type: 'job_chunk', job_id: 'j1', text: 'Hel' })).toBe(true)
    expect(
      b.relay.route(session, {
        type: 'job_done',
        job_id: 'j1',
        tokens_input: 1,
        tokens_output: 1,
        processing_time_ms: 5,
      }),
    ).toBe(true)
    expect(a.heard.frames.map(([id, f]) => `${id}:${f.type}`)).toEqual([
      'n1:job_chunk',
      'n1:job_done',
    ])
    expect(session.relayedJobs.size).toBe(0)
    // B's own jobs are not routed away.
    expect(b.relay.route(session, { type: 'job_chunk', job_id: 'mine', text: 'x' })).toBe(false)
  })

  it('lists the jobs it relays, and stops one as a cancel from its process would', () => {
    const bus = new MemoryBus()
    const a = start(bus)
    const b = start(bus)
    const { session, sent } = b.connect('n1', 2)
    const remote = a.relay.remote('n1')!
    remote.send(offer('j1'))
    remote.send(offer('j2'))
    expect(b.relay.relayedJobs()).toEqual([
      { jobId: 'j1', nodeId: 'n1', requestId: 'r1', since: expect.any(Number) },
      { jobId: 'j2', nodeId: 'n1', requestId: 'r1', since: expect.any(Number) },
    ])

    expect(b.relay.cancelRelayed('j1')).toBe(session)
    expect(sent.at(-1)).toEqual({ type: 'job_cancel', job_id: 'j1' })
    expect([...session.relayedJobs]).toEqual(['j2'])
    expect(session.freeSlots).toBe(1)
    // Already stopped, or ended by the node first: nothing more is sent.
    expect(b.relay.cancelRelayed('j1')).toBeNull()
    b.relay.route(session, { type: 'job_failed', job_id: 'j2', error: 'x' })
    expect(b.relay.cancelRelayed('j2')).toBeNull()
    expect(sent.filter((f) => f.type === 'job_cancel')).toHaveLength(1)
    expect(b.relay.relayedJobs()).toEqual([])
  })

  it('lets a process that starts see the nodes already connected elsewhere at once', async () => {
    const bus = new MemoryBus()
    const b = start(bus)
    b.connect('n1')
    const a = start(bus)
    expect(a.relay.remote('n1')).toBeUndefined()
    await new Promise((r) => setTimeout(r, 0)) // A's sync goes out once its subscriptions are live
    expect(a.relay.remote('n1')).toMatchObject({ nodeId: 'n1', freeSlots: 2 })
  })

  it('answers an offer for a node that left with a rejection, at once', () => {
    const bus = new MemoryBus()
    const a = start(bus)
    const b = start(bus)
    b.connect('n1')
    const remote = a.relay.remote('n1')!
    b.sessions.delete('n1') // gone from B before the 'gone' message reached A
    remote.send(offer('j2'))
    expect(a.heard.frames).toEqual([
      ['n1', { type: 'job_rejected', job_id: 'j2', reason: 'The node went offline' }],
    ])
  })

  it('forgets a node when its process says it is gone, or moves it, or falls silent', async () => {
    vi.useFakeTimers()
    const bus = new MemoryBus()
    const a = start(bus, 200)
    const b = start(bus)
    const c = start(bus)
    await vi.advanceTimersByTimeAsync(0) // the processes' start-up syncs are done
    b.connect('n1')
    b.relay.gone('n1')
    expect(a.relay.remote('n1')).toBeUndefined()
    expect(a.heard.gone).toEqual(['n1'])

    b.connect('n2')
    c.connect('n2') // reconnected to C: the jobs A gave it through B are lost
    expect(a.heard.gone).toEqual(['n1', 'n2'])
    expect(a.relay.remote('n2')).toBeDefined()
    b.sessions.delete('n2')
    b.relay.gone('n2') // B's late notice about its old socket changes nothing
    expect(a.relay.remote('n2')).toBeDefined()

    await vi.advanceTimersByTimeAsync(150)
    expect(a.relay.remote('n2')).toBeDefined() // within the timeout
    await vi.advanceTimersByTimeAsync(250)
    expect(a.relay.remote('n2')).toBeUndefined() // no presence for longer than the timeout
    expect(a.heard.gone).toEqual(['n1', 'n2', 'n2'])
  })

  it('does not take its own pause for the other processes falling silent', async () => {
    vi.useFakeTimers()
    const bus = new MemoryBus()
    const a = start(bus, 200)
    const b = start(bus)
    await vi.advanceTimersByTimeAsync(0)
    const { session } = b.connect('n1')
    await vi.advanceTimersByTimeAsync(100)
    // A is paused for 5 s: its clock moves on, none of its timers runs.
    vi.setSystemTime(Date.now() + 5000)
    await vi.advanceTimersByTimeAsync(70) // the sweep, overdue, runs first on waking
    expect(a.relay.remote('n1')).toBeDefined()
    b.relay.announce(session) // what B said meanwhile is read after it
    await vi.advanceTimersByTimeAsync(150)
    expect(a.relay.remote('n1')).toBeDefined()
    await vi.advanceTimersByTimeAsync(250) // and B really silent since: forgotten
    expect(a.relay.remote('n1')).toBeUndefined()
  })
})
