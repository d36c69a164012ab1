import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, redisTargetOf } from './config.js';

describe('when REDIS_URL names one server', () => {
  it.each(['redis://127.0.0.1:6379', 'rediss://user:secret@redis.example:6380/2'])('should pass %s to ioredis as it is', (url) => {
    expect(redisTargetOf(url)).toEqual({ kind: 'single', url });
    expect(parseConfig({ REDIS_URL: url }).REDIS_URL).toBe(url);
  });
});

describe('when REDIS_URL names a cluster', () => {
  it('should read every node, and the credentials once', () => {
    expect(redisTargetOf('redis+cluster://:p%40ss@10.0.0.1:7000,[::1]:7001,redis-3.internal:7002/')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
        { host: 'redis-3.internal', port: 7002 },
      ],
      password: 'p@ss',
    });
    expect(redisTargetOf('redis+cluster://sync:pw@h:1')).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'h', port: 1 }],
      username: 'sync',
      password: 'pw',
    });
  });

  it.each([
    ['redis+cluster://h1:7000,h2', '"h2" is not host:port'],
    ['redis+cluster://', '"" is not host:port'],
    ['redis+cluster://h:70000', '"h:70000" is not host:port'],
  ])('should refuse %s, saying which node is wrong', (url, problem) => {
    expect(() => parseConfig({ REDIS_URL: url })).toThrow(ConfigError);
    expect(() => parseConfig({ REDIS_URL: url })).toThrow(problem);
  });

  it('should refuse another scheme', () => {
    expect(() => parseConfig({ REDIS_URL: 'http://h:6379' })).toThrow(
      'REDIS_URL: must be a redis:// or rediss:// URL, or redis+cluster://host:port,host:port,...',
    );
  });
});
