import type { ModelRecord } from '@meshwork/protocol/records'
import { formatGigabytes } from './format.ts'

/** What the catalogue knows of a model file's size. */
export interface ModelSize {
  bytes: number
  /** The model card's figure: the file's own size is pinned only once a node first asks for it. */
  approximate: boolean
}

/** The pinned size, else the approximate one, else nothing (0 means "not known" in both columns). */
export function catalogueSize(
  model: Partial<Pick<ModelRecord, 'file_size_bytes' | 'approx_size_bytes'>>,
): ModelSize | null {
  const exact = Number(model.file_size_bytes) || 0
  if (exact > 0) return { bytes: exact, approximate: false }
  const approx = Number(model.approx_size_bytes) || 0
  return approx > 0 ? { bytes: approx, approximate: true } : null
}

/** '4.4 GB', or 'about 4.4 GB' while only the model card's figure is known. */
export function formatModelSize(size: ModelSize, format = formatGigabytes): string {
  return size.approximate ? `about ${format(size.bytes)}` : format(size.bytes)
}
