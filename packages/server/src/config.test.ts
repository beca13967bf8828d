import { describe, expect, it } from 'vitest'
import { configFromEnv } from './config.ts'

describe('configuration from the environment', () => {
  it('has the README defaults on an empty environment', () => {
    expect(configFromEnv({})).toMatchObject({
      port: 8090,
      host: '0.0.0.0',
      dataDir: './data',
      databaseUrl: undefined,
      redisUrl: undefined,
      initialCredits: 1000,
      tokenTtlSeconds: 432_000,
      localNode: true,
      linkFlowLimit: 30,
    })
  })

  it('reads every variable', () => {
    const config = configFromEnv({
      PORT: '9000',
      MESHWORK_DATA_DIR: '/srv/meshwork',
      DATABASE_URL: 'postgres://db/meshwork',
      REDIS_URL: 'redis://cache:6379',
      MESHWORK_INITIAL_CREDITS: '50',
      MESHWORK_LOCAL_NODE: '0',
      MESHWORK_LINK_FLOW_LIMIT: '0',
    })
    expect(config).toMatchObject({
      port: 9000,
      dataDir: '/srv/meshwork',
      databaseUrl: 'postgres://db/meshwork',
      redisUrl: 'redis://cache:6379',
      initialCredits: 50,
      localNode: false,
      linkFlowLimit: 0,
    })
  })

  it('refuses values that are not what they should be', () => {
    expect(() => configFromEnv({ PORT: 'eighty' })).toThrow()
    expect(() => configFromEnv({ MESHWORK_LINK_FLOW_LIMIT: '-1' })).toThrow()
    expect(() => configFromEnv({ MESHWORK_SECRET: 'short' })).toThrow()
  })
})
