import { describe, expect, it } from 'vitest'
import {
  nodeAuthorizationHeader,
  nodeToServerFrameSchema,
  serverToNodeFrameSchema,
  waitFlowResponseSchema,
} from './node-protocol.ts'

const sampling = {
  temperature: 0.7,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 256,
  context_length: 8000,
}

describe('node protocol', () => {
  it('accepts well-formed frames in both directions', () => {
    const offer = {
      type: 'job_offer',
      job_id: 'j1',
      request_id: 'r1',
      model_id: 'm1',
      prompt: { messages: [{ role: 'user', content: 'hi' }] },
      sampling,
    }
    expect(serverToNodeFrameSchema.parse(offer)).toEqual(offer)
    const status = {
      type: 'model_status',
      node_model_id: 'nm1',
      is_downloaded: true,
      download_progress: 100,
      is_serving: false,
      tokens_per_second: 0,
      error_message: '',
    }
    expect(nodeToServerFrameSchema.parse(status)).toEqual(status)
  })

  it('rejects unknown types, bad roles, missing sampling fields and bad hashes', () => {
    expect(nodeToServerFrameSchema.safeParse({ type: 'nope' }).success).toBe(false)
    const bad = {
      type: 'job_offer',
      job_id: 'j1',
      request_id: 'r1',
      model_id: 'm1',
      prompt: { messages: [{ role: 'tool', content: 'x' }] },
      sampling,
    }
    expect(serverToNodeFrameSchema.safeParse(bad).success).toBe(false)
    const { max_tokens: _drop, ...partial } = sampling
    const noMax = {
      ...bad,
      prompt: { messages: [{ role: 'user', content: 'x' }] },
      sampling: partial,
    }
    expect(serverToNodeFrameSchema.safeParse(noMax).success).toBe(false)
    const desired = {
      type: 'desired_state',
      node_models: [
        {
          id: 'nm1',
          model: { id: 'm', name: 'n', file_name: 'f.gguf', file_size_bytes: 1, sha256: 'xyz' },
          requested_download: true,
          requested_serving: false,
        },
      ],
    }
    expect(serverToNodeFrameSchema.safeParse(desired).success).toBe(false)
    expect(
      nodeToServerFrameSchema.safeParse({ type: 'heartbeat', busy_jobs: -1, max_jobs: 1 }).success,
    ).toBe(false)
  })

  it('parses wait-flow answers and builds the authorization header', () => {
    expect(waitFlowResponseSchema.parse({ status: 'pending' })).toEqual({ status: 'pending' })
    expect(waitFlowResponseSchema.safeParse({ status: 'approved', node_id: 'n' }).success).toBe(
      false,
    )
    expect(nodeAuthorizationHeader('n1', 'c2')).toBe('Bearer n1.c2')
  })
})

describe('node protocol limits (everything a node sends is untrusted)', () => {
  const hello = {
    type: 'hello',
    protocol_version: 2,
    agent_version: '0.1.0',
    hardware: { cpu_model: 'cpu', cpu_cores: 2, memory_bytes: 1024, gpu: null },
    engines: [{ kind: 'llama.cpp', version: 'node-llama-cpp 3.22.1', backend: 'cpu-avx2' }],
    max_jobs: 1,
  }

  it('bounds every string of hello, and reads a version 1 engine as backend unknown', () => {
    expect(nodeToServerFrameSchema.safeParse(hello).success).toBe(true)
    const long = (n: number) => 'x'.repeat(n)
    for (const bad of [
      { ...hello, agent_version: long(65) },
      { ...hello, hardware: { ...hello.hardware, cpu_model: long(201) } },
      { ...hello, hardware: { ...hello.hardware, gpu: long(201) } },
      { ...hello, engines: [{ ...hello.engines[0], version: long(101) }] },
      { ...hello, engines: [{ ...hello.engines[0], backend: 'CUDA <script>' }] },
      { ...hello, max_jobs: 65 },
    ])
      expect(nodeToServerFrameSchema.safeParse(bad).success).toBe(false)
    const v1 = nodeToServerFrameSchema.parse({
      ...hello,
      engines: [{ kind: 'openai', version: null }],
    })
    expect(v1).toMatchObject({ engines: [{ backend: 'unknown' }] })
  })

  it('bounds errors, reasons and chunks; token ids are optional non-negative integers', () => {
    const ok = (f: object) => nodeToServerFrameSchema.safeParse(f).success
    expect(ok({ type: 'job_failed', job_id: 'j', error: 'x'.repeat(1000) })).toBe(true)
    expect(ok({ type: 'job_failed', job_id: 'j', error: 'x'.repeat(1001) })).toBe(false)
    expect(ok({ type: 'job_rejected', job_id: 'j', reason: 'x'.repeat(201) })).toBe(false)
    expect(ok({ type: 'job_chunk', job_id: 'j', text: 'a' })).toBe(true)
    expect(ok({ type: 'job_chunk', job_id: 'j', text: 'a', tokens: [1, 2] })).toBe(true)
    expect(ok({ type: 'job_chunk', job_id: 'j', text: 'a', tokens: [-1] })).toBe(false)
    expect(ok({ type: 'job_chunk', job_id: 'j', text: 'a', tokens: [1.5] })).toBe(false)
    expect(ok({ type: 'job_chunk', job_id: 'j', text: 'a'.repeat(65_537) })).toBe(false)
    expect(ok({ type: 'job_chunk', job_id: 'x'.repeat(65), text: 'a' })).toBe(false)
    const status = {
      type: 'model_status',
      node_model_id: 'nm',
      is_downloaded: true,
      download_progress: 100,
      is_serving: true,
      tokens_per_second: 1e9,
      error_message: '',
    }
    expect(ok(status)).toBe(true)
    expect(ok({ ...status, error_message: 'e'.repeat(1001) })).toBe(false)
  })
})
