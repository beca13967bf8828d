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
      apiKeyRateLimit: 60,
      apiUserRateLimit: 120,
      signupLimit: 10,
      chatRateLimit: 20,
      trustedProxies: [],
      clientIpHeader: 'X-Forwarded-For',
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
      MESHWORK_API_KEY_RATE_LIMIT: '5',
      MESHWORK_API_USER_RATE_LIMIT: '0',
      MESHWORK_SIGNUP_LIMIT: '0',
      MESHWORK_CHAT_RATE_LIMIT: '5',
      MESHWORK_TRUSTED_PROXIES: ' 10.0.0.0/8, loopback ,',
      MESHWORK_CLIENT_IP_HEADER: 'X-Real-IP',
    })
    expect(config).toMatchObject({
      port: 9000,
      dataDir: '/srv/meshwork',
      databaseUrl: 'postgres://db/meshwork',
      redisUrl: 'redis://cache:6379',
      initialCredits: 50,
      localNode: false,
      linkFlowLimit: 0,
      apiKeyRateLimit: 5,
      apiUserRateLimit: 0,
      signupLimit: 0,
      chatRateLimit: 5,
      trustedProxies: ['10.0.0.0/8', 'loopback'],
      clientIpHeader: 'X-Real-IP',
    })
  })

  it('refuses values that are not what they should be', () => {
    expect(() => configFromEnv({ PORT: 'eighty' })).toThrow()
    expect(() => configFromEnv({ MESHWORK_LINK_FLOW_LIMIT: '-1' })).toThrow()
    expect(() => configFromEnv({ MESHWORK_SECRET: 'short' })).toThrow()
    expect(() => configFromEnv({ MESHWORK_API_KEY_RATE_LIMIT: 'many' })).toThrow()
  })
})
