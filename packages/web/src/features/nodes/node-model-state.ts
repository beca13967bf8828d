/**
 * @module The node-model lifecycle of the Edit Node dialog (spec §4) and the active-toggle rules.
 */
import type { CatalogueModel, NodeHardwareInfo, NodeModelRecord } from '../../lib/node-records.ts'

export type NodeModelPhase =
  'not-downloaded' | 'downloading' | 'download-failed' | 'downloaded' | 'serving'

/**
 * Where a catalogue model stands on a node. Serving wins over downloaded; a download that was
 * requested but has not finished is Downloading, or Download failed when the node reported why
 * (it may be retrying by itself: the reason says so); a cancelled request falls back to not
 * downloaded.
 */
export function nodeModelPhase(record: NodeModelRecord | undefined): NodeModelPhase {
  if (!record) return 'not-downloaded'
  if (record.is_serving) return 'serving'
  if (record.is_downloaded) return 'downloaded'
  if (record.requested_download) return record.error_message ? 'download-failed' : 'downloading'
  return 'not-downloaded'
}

export { isNodeOnline } from '../../lib/node-records.ts'

/** Serving was asked for and the node could not start it (it reported why). */
export function servingFailed(record: NodeModelRecord | undefined): boolean {
  return (
    !!record &&
    record.is_downloaded &&
    record.requested_serving &&
    !record.is_serving &&
    !!record.error_message
  )
}

/** Delete is offered only when downloaded and not serving. */
export function canDeleteModel(record: NodeModelRecord | undefined): boolean {
  return !!record && record.is_downloaded && !record.is_serving
}

/** download_progress is a string holding a number; it reads as a percent clamped to 0..100. */
export function parseDownloadPercent(progress: string | number | null | undefined): number {
  const value = typeof progress === 'number' ? progress : Number.parseFloat(progress ?? '')
  if (!Number.isFinite(value)) return 0
  return Math.min(100, Math.max(0, value))
}

export interface ModelEntry {
  model: CatalogueModel
  record: NodeModelRecord | undefined
}

/**
 * Every catalogue model in sort order, each with this node's record for it; node models whose
 * model is no longer in the active catalogue are kept at the end so they can still be stopped.
 */
export function mergeModelEntries(
  catalogue: CatalogueModel[],
  records: NodeModelRecord[],
): ModelEntry[] {
  const byModel = new Map(records.map((r) => [r.model, r]))
  const entries: ModelEntry[] = catalogue.map((model) => ({ model, record: byModel.get(model.id) }))
  const known = new Set(catalogue.map((m) => m.id))
  for (const record of records) {
    if (!known.has(record.model)) {
      entries.push({
        model: record.expand?.model ?? { id: record.model, name: record.model },
        record,
      })
    }
  }
  return entries
}

export interface MemoryFit {
  fits: boolean
  /** Estimated memory to run the model: the file plus a fifth, plus 0.5 GiB for context. */
  needBytes: number
  ramBytes: number
  vramBytes: number | null
}

/**
 * Whether a model fits the memory the node reported in its hello: RAM, or VRAM where
 * node-llama-cpp reports a GPU's (a model runs from either). Null when the node never reported
 * its hardware or the model's size is not known yet.
 */
export function memoryFit(
  sizeBytes: number | undefined,
  hardware: NodeHardwareInfo | null | undefined,
): MemoryFit | null {
  const ram = hardware?.memory_bytes ?? 0
  if (!sizeBytes || !(ram > 0)) return null
  const vram = hardware?.vram_bytes && hardware.vram_bytes > 0 ? hardware.vram_bytes : null
  const needBytes = Math.round(sizeBytes * 1.2 + 0.5 * 1024 ** 3)
  return { fits: needBytes <= Math.max(ram, vram ?? 0), needBytes, ramBytes: ram, vramBytes: vram }
}

/** At least one model on the node is serving. */
export function hasServingModel(records: NodeModelRecord[]): boolean {
  return records.some((r) => r.is_serving)
}

export interface ActiveToggleState {
  /** The switch cannot be turned on (nothing serving); it stays usable to turn a node off. */
  disabled: boolean
  /** Show the 'no serving model' warning. */
  warning: boolean
  /** Red: active but nothing serving. */
  danger: boolean
}

/** Node activation requires at least one serving model (spec §4, §5). */
export function activeToggleState(isActive: boolean, serving: boolean): ActiveToggleState {
  return {
    disabled: !serving && !isActive,
    warning: !serving,
    danger: isActive && !serving,
  }
}
