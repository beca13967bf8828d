/**
 * @module The coordinator's configuration, read once from the environment and passed down.
 */
import { z } from 'zod'
import type { ThrottleOptions } from './core/auth/login-throttle.ts'

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  HOST: z.string().default('0.0.0.0'),
  MESHWORK_DATA_DIR: z.string().default('./data'),
  DATABASE_URL: z.string().optional(),
  MESHWORK_DATABASE_SCHEMA: z
    .string()
    .regex(/^([a-z_][a-z0-9_]*)?$/)
    .optional(),
  REDIS_URL: z.string().optional(),
  MESHWORK_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,64}$/)
    .default('meshwork'),
  MESHWORK_SECRET: z.string().min(32).optional(),
  // Credits are exact thousandths (see core/ledger/credits.ts).
  MESHWORK_INITIAL_CREDITS: z.coerce
    .number()
    .min(0)
    .refine(
      (v) =>
        Number.isSafeInteger(Math.round(v * 1000)) &&
        Math.abs(v * 1000 - Math.round(v * 1000)) < 1e-6,
      {
        message: 'at most 3 decimal places',
      },
    )
    .default(1000),
  MESHWORK_TOKEN_TTL: z.coerce.number().int().min(60).default(432_000),
  MESHWORK_LOCAL_NODE: z.string().default('1'),
  MESHWORK_MODEL_MIRROR: z.string().optional(),
  MESHWORK_WEB_DIST: z.string().optional(),
  MESHWORK_LINK_FLOW_LIMIT: z.coerce.number().int().min(0).default(30),
  MESHWORK_SIGNUP_LIMIT: z.coerce.number().int().min(0).default(10),
  MESHWORK_CHAT_RATE_LIMIT: z.coerce.number().int().min(0).default(20),
  MESHWORK_DRAIN_SECONDS: z.coerce.number().min(0).max(3600).default(30),
  MESHWORK_TRUSTED_PROXIES: z.string().default(''),
  MESHWORK_CLIENT_IP_HEADER: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/)
    .default('X-Forwarded-For'),
  MESHWORK_METRICS_TOKEN: z.string().min(16).optional(),
  MESHWORK_REALTIME_MAX_SUBSCRIPTIONS: z.coerce.number().int().min(0).default(200),
  MESHWORK_REALTIME_MAX_STREAMS_PER_USER: z.coerce.number().int().min(0).default(20),
  MESHWORK_REALTIME_MAX_STREAMS_PER_ADDRESS: z.coerce.number().int().min(0).default(100),
  MESHWORK_API_KEY_RATE_LIMIT: z.coerce.number().int().min(0).default(60),
  MESHWORK_API_USER_RATE_LIMIT: z.coerce.number().int().min(0).default(120),
})

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl?: string
  /** PostgreSQL schema (tests isolate themselves with one). */
  databaseSchema?: string
  redisUrl?: string
  /** Prefix of every Redis channel and key, so several deployments can share one Redis. */
  redisPrefix?: string
  /** Signing secret; when absent one is generated once and kept in the database. */
  secret?: string
  initialCredits: number
  tokenTtlSeconds: number
  localNode: boolean
  modelMirror?: string
  /** Built-in model files (default packages/server/builtin-models); tests point elsewhere. */
  builtinModelsDir?: string
  /** The node agent package served at /downloads/meshwork-node.tgz (default packages/node/dist). */
  agentPackage?: string
  webDist?: string
  /** Link flows one address may start per 10 minutes; 0 or absent: no limit (the environment default is 30). */
  linkFlowLimit?: number
  /** Sign-ups one client address may make per hour; 0 or absent: no limit (env default 10). */
  signupLimit?: number
  /** Chat sends (and retries) one user may make per minute, and a tenth of the quote points (see
   * network-routes.ts); 0 or absent: no limit (env default 20). */
  chatRateLimit?: number
  /** On SIGTERM, how long answers in flight may run before they fail retryable (default 30 s). */
  drainMs?: number
  /** Direct peers (addresses, CIDRs, or proxy-addr's `loopback`/`linklocal`/`uniquelocal`) whose
   * forwarding headers are believed: the client address from `clientIpHeader`, the host and
   * scheme from X-Forwarded-Host/-Proto. Empty or absent: no proxy is trusted. */
  trustedProxies?: string[]
  /** The header a trusted proxy puts the client address in (default X-Forwarded-For, read right
   * to left past trusted hops; any other header is read as one address). */
  clientIpHeader?: string
  /** The login throttle's numbers (tests shorten them); defaults in core/auth/login-throttle.ts. */
  loginThrottle?: Partial<ThrottleOptions>
  /** When set, Prometheus metrics are served at /api/metrics to `Authorization: Bearer <token>`. */
  metricsToken?: string
  /** Realtime limits (0: none); absent ones take the defaults (200 subscriptions per stream, 20
   * streams per user, 100 per address). */
  realtimeLimits?: {
    subscriptionsPerClient?: number
    connectionsPerUser?: number
    connectionsPerAddress?: number
  }
  /** `/v1` calls one API key may make per minute; 0 or absent: no limit (environment default 60). */
  apiKeyRateLimit?: number
  /** `/v1` calls one user may make per minute, all keys together; 0 or absent: no limit (120). */
  apiUserRateLimit?: number
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.parse(env)
  return {
    port: parsed.PORT,
    host: parsed.HOST,
    dataDir: parsed.MESHWORK_DATA_DIR,
    databaseUrl: parsed.DATABASE_URL || undefined,
    databaseSchema: parsed.MESHWORK_DATABASE_SCHEMA || undefined,
    redisUrl: parsed.REDIS_URL || undefined,
    redisPrefix: parsed.MESHWORK_REDIS_PREFIX,
    secret: parsed.MESHWORK_SECRET,
    initialCredits: parsed.MESHWORK_INITIAL_CREDITS,
    tokenTtlSeconds: parsed.MESHWORK_TOKEN_TTL,
    localNode: parsed.MESHWORK_LOCAL_NODE !== '0',
    modelMirror: parsed.MESHWORK_MODEL_MIRROR,
    webDist: parsed.MESHWORK_WEB_DIST,
    linkFlowLimit: parsed.MESHWORK_LINK_FLOW_LIMIT,
    signupLimit: parsed.MESHWORK_SIGNUP_LIMIT,
    chatRateLimit: parsed.MESHWORK_CHAT_RATE_LIMIT,
    drainMs: parsed.MESHWORK_DRAIN_SECONDS * 1000,
    trustedProxies: parsed.MESHWORK_TRUSTED_PROXIES.split(',')
      .map((p) => p.trim())
      .filter(Boolean),
    clientIpHeader: parsed.MESHWORK_CLIENT_IP_HEADER,
    metricsToken: parsed.MESHWORK_METRICS_TOKEN || undefined,
    realtimeLimits: {
      subscriptionsPerClient: parsed.MESHWORK_REALTIME_MAX_SUBSCRIPTIONS,
      connectionsPerUser: parsed.MESHWORK_REALTIME_MAX_STREAMS_PER_USER,
      connectionsPerAddress: parsed.MESHWORK_REALTIME_MAX_STREAMS_PER_ADDRESS,
    },
    apiKeyRateLimit: parsed.MESHWORK_API_KEY_RATE_LIMIT,
    apiUserRateLimit: parsed.MESHWORK_API_USER_RATE_LIMIT,
  }
}
