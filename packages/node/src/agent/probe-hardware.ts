/**
 * @module probe-hardware
 * What the node reports in `hello`: CPU, memory, and the GPU the engine sees.
 */
import { cpus, totalmem } from 'node:os'
import type { NodeHardware } from '@meshwork/protocol'
import type { InferenceEngine } from '../inference/inference-engine.ts'

/** Probes the machine; a GPU probe failure reports no GPU rather than failing the agent. */
export async function probeHardware(engine: InferenceEngine): Promise<NodeHardware> {
  const list = cpus()
  return {
    cpu_model: list[0]?.model.trim() || 'unknown',
    cpu_cores: list.length,
    memory_bytes: totalmem(),
    gpu: await engine.describeGpu().catch(() => null),
    vram_bytes: (await engine.describeVram?.().catch(() => null)) ?? null,
  }
}
