/**
 * @module node-home
 * Where the agent keeps its state: `MESHWORK_NODE_HOME`, default `~/.meshwork-node`.
 */
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'

/** The node home directory for an environment (read once by callers, passed down). */
export function resolveNodeHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.MESHWORK_NODE_HOME?.trim()
  return fromEnv ? resolve(fromEnv) : join(homedir(), '.meshwork-node')
}

/** Directory of downloaded model files inside a node home. */
export function modelsDirectory(home: string): string {
  return join(home, 'models')
}
