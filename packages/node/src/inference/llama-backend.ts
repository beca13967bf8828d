/**
 * @module llama-backend
 * What node-llama-cpp computes on, as `hello` reports it: the backend class (the GPU API, or the
 * CPU's widest instruction set the loaded llama.cpp build uses) and the engine version. Numerics,
 * and so the verification thresholds, differ between backend classes.
 */
import type { Llama } from 'node-llama-cpp'

/** `cuda`, `metal`, `vulkan`, or `cpu-<instruction set>` from llama.cpp's system info line. */
export function backendClass(llama: Pick<Llama, 'gpu' | 'systemInfo'>): string {
  if (llama.gpu) return llama.gpu
  const on = (feature: string) => new RegExp(`\\b${feature} = 1\\b`).test(llama.systemInfo)
  for (const feature of ['AVX512', 'AVX2', 'AVX', 'SVE', 'NEON']) {
    if (on(feature)) return `cpu-${feature.toLowerCase()}`
  }
  return 'cpu'
}

/** `node-llama-cpp <version>, llama.cpp <release>`, cut to the protocol's length. */
export function engineVersion(
  moduleVersion: string,
  llama: Pick<Llama, 'llamaCppRelease'>,
): string {
  return `node-llama-cpp ${moduleVersion}, llama.cpp ${llama.llamaCppRelease.release}`.slice(0, 100)
}
