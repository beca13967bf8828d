/**
 * @module verify-model-file
 * Whether a model file on disk is the catalogue's, without hashing gigabytes on every start.
 *
 * Once the agent has checked a file's sha256 (a finished download, or a hash of a file it found on
 * disk) it records the hash in a sidecar beside the file, `.<file name>.sha256`, together with the
 * file's size, inode, mtime and ctime as they were when it was hashed. A file is trusted without
 * hashing only while all of those still match and the recorded hash is the catalogue's; anything
 * else (no sidecar, a torn or foreign one, a file rewritten, replaced by a rename, or with its
 * mtime set back, which moves its ctime) costs one full hash. The sidecar's name starts with a
 * dot, which no catalogue file name may, so it can never be taken for a model file nor be
 * overwritten by one.
 */
import { open, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { z } from 'zod'
import { sha256OfFile } from './sha256-of-file.ts'

/** Hashes a whole file; injectable so tests can count hashes. */
export type HashFile = (path: string, signal?: AbortSignal) => Promise<string>

/**
 * `trusted`: the sidecar vouched for it; `hashed`: it was hashed, matched, and the sidecar was
 * written; `mismatch`: it was not the catalogue's file and was removed (with its sidecar).
 */
export type ModelFileVerdict =
  | { state: 'absent' }
  | { state: 'trusted' }
  | { state: 'hashed' }
  | { state: 'mismatch'; reason: string }

export interface VerifyModelFileOptions {
  path: string
  /** The catalogue's sha256 (hex). */
  sha256: string
  /** The catalogue's size in bytes; 0 when unknown. */
  sizeBytes: number
  hashFile?: HashFile
  signal?: AbortSignal
}

const SIDECAR_LIMIT = 4096

const fingerprintSchema = z.object({
  size: z.string(),
  ino: z.string(),
  mtimeNs: z.string(),
  ctimeNs: z.string(),
})
type Fingerprint = z.infer<typeof fingerprintSchema>
const sidecarSchema = fingerprintSchema.extend({ sha256: z.string().regex(/^[0-9a-f]{64}$/) })

/** Path of the sidecar that records the verified hash of the model file at `path`. */
export function sidecarPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.sha256`)
}

/** Decides whether the file at `path` may be used; removes it when it may not. */
export async function verifyModelFile(o: VerifyModelFileOptions): Promise<ModelFileVerdict> {
  const before = await fingerprint(o.path)
  if (!before) return { state: 'absent' }
  const name = basename(o.path)
  const expected = o.sha256.toLowerCase()
  if (o.sizeBytes > 0 && before.size !== String(o.sizeBytes)) {
    await removeModelFile(o.path)
    return {
      state: 'mismatch',
      reason: `${name} was ${before.size} bytes, not the catalogue's ${o.sizeBytes}`,
    }
  }
  const recorded = await readSidecar(o.path)
  if (recorded?.sha256 === expected && sameFingerprint(recorded, before))
    return { state: 'trusted' }

  const got = await (o.hashFile ?? sha256OfFile)(o.path, o.signal)
  const after = await fingerprint(o.path)
  // A file that changed while it was hashed: the hash may describe neither version.
  if (got !== expected || !after || !sameFingerprint(before, after)) {
    await removeModelFile(o.path)
    return {
      state: 'mismatch',
      reason:
        got === expected
          ? `${name} changed while it was checked`
          : `${name} did not match its sha256: expected ${expected}, got ${got}`,
    }
  }
  await writeSidecar(o.path, expected, after)
  return { state: 'hashed' }
}

/**
 * Records that the file now at `path` has the verified `sha256`. Call it only after the file is
 * in its final place. Never throws: without a sidecar the file is only hashed again next time.
 */
export async function recordVerifiedHash(path: string, sha256: string): Promise<void> {
  const fp = await fingerprint(path)
  if (fp) await writeSidecar(path, sha256.toLowerCase(), fp)
}

/** Removes a model file and its sidecar (the sidecar first: it never outlives a vouched file). */
export async function removeModelFile(path: string): Promise<void> {
  await rm(sidecarPath(path), { force: true })
  await rm(`${sidecarPath(path)}.tmp`, { force: true })
  await rm(path, { force: true })
}

async function fingerprint(path: string): Promise<Fingerprint | null> {
  const s = await stat(path, { bigint: true }).catch(() => null)
  if (!s?.isFile()) return null
  return {
    size: String(s.size),
    ino: String(s.ino),
    mtimeNs: String(s.mtimeNs),
    ctimeNs: String(s.ctimeNs),
  }
}

function sameFingerprint(a: Fingerprint, b: Fingerprint): boolean {
  return a.size === b.size && a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
}

/** The sidecar's record, or null when it is missing, torn, too large or not ours. */
async function readSidecar(path: string): Promise<z.infer<typeof sidecarSchema> | null> {
  const fh = await open(sidecarPath(path), 'r').catch(() => null)
  if (!fh) return null
  try {
    const buf = Buffer.alloc(SIDECAR_LIMIT)
    const { bytesRead } = await fh.read(buf, 0, SIDECAR_LIMIT, 0)
    const parsed = sidecarSchema.safeParse(JSON.parse(buf.subarray(0, bytesRead).toString('utf8')))
    return parsed.success ? parsed.data : null
  } catch {
    return null // unreadable or not JSON: the file is hashed, as without a sidecar
  } finally {
    await fh.close()
  }
}

/** Writes the sidecar atomically (temp file, fsync, rename); a failure only costs a later hash. */
async function writeSidecar(path: string, sha256: string, fp: Fingerprint): Promise<void> {
  const target = sidecarPath(path)
  const temp = `${target}.tmp`
  try {
    const fh = await open(temp, 'w', 0o644)
    try {
      await fh.writeFile(`${JSON.stringify({ sha256, ...fp })}\n`)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(temp, target)
  } catch {
    // Disk full, read-only: the model file is verified all the same; it is hashed next time.
    await rm(temp, { force: true }).catch(() => undefined)
  }
}
