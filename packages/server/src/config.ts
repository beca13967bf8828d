/**
 * @module The coordinator's configuration, read once from the environment and passed down.
 */
import { z } from 'zod'

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  HOST: z.string().default('0.0.0.0'),
  MESHWORK_DATA_DIR: z.string().default('./data'),
  DATABASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  MESHWORK_SECRET: z.string().min(32).optional(),
  MESHWORK_INITIAL_CREDITS: z.coerce.number().min(0).default(1000),
  MESHWORK_TOKEN_TTL: z.coerce.number().int().min(60).default(432_000),
  MESHWORK_LOCAL_NODE: z.string().default('1'),
  MESHWORK_MODEL_MIRROR: z.string().optional(),
  MESHWORK_WEB_DIST: z.string().optional(),
  MESHWORK_LINK_FLOW_LIMIT: z.coerce.number().int().min(0).default(30),
  MESHWORK_METRICS_TOKEN: z.string().min(16).optional(),
})

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl?: string
  /** PostgreSQL schema (tests isolate themselves with one). */
  databaseSchema?: string
  redisUrl?: string
  /** Signing secret; when absent one is generated once and kept in the database. */
  secret?: string
  initialCredits: number
  tokenTtlSeconds: number
  localNode: boolean
  modelMirror?: string
  webDist?: string
  /** Link flows one address may start per 10 minutes; 0 or absent: no limit (the environment default is 30). */
  linkFlowLimit?: number
  /** When set, Prometheus metrics are served at /api/metrics to `Authorization: Bearer <token>`. */
  metricsToken?: string
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.parse(env)
  return {
    port: parsed.PORT,
    host: parsed.HOST,
    dataDir: parsed.MESHWORK_DATA_DIR,
    databaseUrl: parsed.DATABASE_URL || undefined,
    redisUrl: parsed.REDIS_URL || undefined,
    secret: parsed.MESHWORK_SECRET,
    initialCredits: parsed.MESHWORK_INITIAL_CREDITS,
    tokenTtlSeconds: parsed.MESHWORK_TOKEN_TTL,
    localNode: parsed.MESHWORK_LOCAL_NODE !== '0',
    modelMirror: parsed.MESHWORK_MODEL_MIRROR,
    webDist: parsed.MESHWORK_WEB_DIST,
    linkFlowLimit: parsed.MESHWORK_LINK_FLOW_LIMIT,
    metricsToken: parsed.MESHWORK_METRICS_TOKEN || undefined,
  }
}
