/**
 * @module credentials-store
 * The node's credential on disk: `<home>/credentials.json`, readable by the owner only (0600).
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'

export const nodeCredentialsSchema = z.object({
  server: z.string().url(),
  node_id: z.string().min(1),
  credential: z.string().min(1),
})
export type NodeCredentials = z.infer<typeof nodeCredentialsSchema>

/** No credentials file yet (the node was never linked), or it is unreadable. */
export class MissingCredentialsError extends Error {
  override name = 'MissingCredentialsError'
}

export function credentialsPath(home: string): string {
  return join(home, 'credentials.json')
}

/** Writes the credentials, creating the home directory (0700) and the file (0600). */
export async function writeCredentials(home: string, creds: NodeCredentials): Promise<string> {
  await mkdir(home, { recursive: true, mode: 0o700 })
  const path = credentialsPath(home)
  await writeFile(path, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 })
  // writeFile keeps the mode of a file that already existed: tighten it explicitly.
  await chmod(path, 0o600)
  return path
}

export async function readCredentials(home: string): Promise<NodeCredentials> {
  const path = credentialsPath(home)
  let raw: string
  try {
    raw = await readFile(path, 'utf8')
  } catch (err) {
    throw new MissingCredentialsError(`No node credentials at ${path}`, { cause: err })
  }
  // A file cut short (a full disk, a crash while writing) is invalid, not a crash whose message
  // quotes a piece of the credential.
  let json: unknown = null
  try {
    json = JSON.parse(raw)
  } catch {
    // reported below
  }
  const parsed = nodeCredentialsSchema.safeParse(json)
  if (!parsed.success) throw new MissingCredentialsError(`Invalid node credentials in ${path}`)
  return parsed.data
}
