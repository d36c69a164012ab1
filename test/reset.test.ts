import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDatabase } from '../platform/db.js';
import { dropDatabase, startEnvironment, type TestEnvironment } from './support/harness.js';

/* `npm run reset`: a development database dropped, created again migrated and empty, its queues removed. */

function reset(env: TestEnvironment, args: string[], extra: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/reset.ts', ...args], {
      env: {
        ...process.env,
        DATABASE_URL: env.config.DATABASE_URL,
        REDIS_URL: env.config.REDIS_URL,
        QUEUE_PREFIX: env.config.QUEUE_PREFIX,
        LOG_LEVEL: 'silent',
        NODE_ENV: 'development',
        ...extra,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

let env: TestEnvironment;
let redis: Redis;
const accounts = async () => {
  const db = await createDatabase(env.config.DATABASE_URL, { maximumPoolSize: 1 });
  try {
    return await db.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int8 AS count FROM accounts`);
  } finally {
    await db.end();
  }
};
const queueKeys = () => redis.keys(`${env.config.QUEUE_PREFIX}:*`);

beforeAll(async () => {
  env = await startEnvironment();
  redis = new Redis(env.config.REDIS_URL);
  const token = await env.token();
  await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
  await env.request('POST', '/api/v1/languages/nl/products', {
    token,
    body: { product: { id: 'P1', name: 'Shoe', category_ids: ['C1'] } },
  });
  await env.drain();
  await env.api.close();
  await env.worker?.close();
  await env.db.end();
  expect(await accounts()).toBe(1);
  expect((await queueKeys()).length).toBeGreaterThan(0);
});
afterAll(async () => {
  redis?.disconnect();
  // The environment's own pools are closed already; drop its database.
  await dropDatabase(env.databaseName);
});

describe('when a development database is reset', { timeout: 120_000 }, () => {
  it('should refuse without --yes, and change nothing', async () => {
    const result = await reset(env, []);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^This deletes everything in cs_test_\w+: add --yes to go ahead\./);
    expect(await accounts()).toBe(1);
  });

  it('should refuse in production, and change nothing', async () => {
    const result = await reset(env, ['--yes'], { NODE_ENV: 'production' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('Refusing to reset: NODE_ENV is production. A reset deletes every account, client and record.\n');
    expect(await accounts()).toBe(1);
  });

  it('should leave the database migrated and empty, and the queues gone', async () => {
    const result = await reset(env, ['--yes']);
    expect(result, result.stderr).toMatchObject({ code: 0 });
    expect(result.stdout).toMatch(
      /^reset cs_test_\w+: dropped, created and migrated; queues and limit counters of prefix "tq_\w+" removed\n$/,
    );
    expect(await accounts()).toBe(0);
    expect(await queueKeys()).toEqual([]);
  });

  it('should print its usage for --help and exit 0', async () => {
    const result = await reset(env, ['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: npm run reset -- --yes/);
  });
});
