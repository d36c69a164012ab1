import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../platform/db.js';
import { createRedis, type RedisClient } from '../platform/redis.js';
import { parseWalPosition, sortableWalPosition } from '../platform/wal-position.js';
import { WritePositions } from '../sync/write-positions.js';
import { startEnvironment, type TestEnvironment, uniqueName } from './support/harness.js';
import { freePort, startRedis, stopProcess } from './support/processes.js';

/*
 * Accounts' write positions (sync/write-positions.ts) on the real Postgres and
 * a redis-server of the test's own, whose command counts (INFO commandstats)
 * show what it was asked.
 */

let env: TestEnvironment;
let server: ChildProcess;
let redis: RedisClient;
const prefix = uniqueName('rwtest');
/** Statements the positions sent to Postgres. */
let statements = 0;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  const port = await freePort();
  server = await startRedis(port);
  redis = createRedis(`redis://127.0.0.1:${port}`, 'producer');
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  if (server) await stopProcess(server);
  await env?.close();
});

/** How often the test's Redis has run each command so far. */
const calls = async (): Promise<Record<string, number>> => {
  const info = await redis.info('commandstats');
  return Object.fromEntries([...info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map((match) => [match[1]!, Number(match[2])]));
};
/** Commands run since `before` (INFO itself left out; a script's own commands are counted too). */
const since = async (before: Record<string, number>) => {
  const after = await calls();
  return Object.fromEntries(
    Object.entries(after)
      .filter(([name, count]) => name !== 'info' && count !== (before[name] ?? 0))
      .map(([name, count]) => [name, count - (before[name] ?? 0)]),
  );
};

/** The environment's pool, counting the statements sent through `one`. */
const counting = (db: Database): Database =>
  new Proxy(db, {
    get(target, property, receiver) {
      if (property === 'one') {
        return (...args: Parameters<Database['one']>) => {
          statements += 1;
          return target.one(...args);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });

const positions = () => new WritePositions(counting(env.db), redis, { prefix, ttlS: 60, onFailure: () => undefined });

describe('when the writes of many accounts commit in one turn', () => {
  it('should keep all their positions with one position query and one Redis call', async () => {
    const kept = positions();
    // The script is loaded by its first call.
    await kept.wrote(1);
    const before = await calls();
    statements = 0;
    await Promise.all([2, 3, 4, 5, 6, 2, 3].map((account) => kept.wrote(account)));
    // One script call (the gets and sets counted are the script's own, inside it).
    const ran = await since(before);
    expect([ran['evalsha'], ran['eval'], ran['mget']]).toEqual([1, undefined, undefined]);
    expect(statements).toBe(1);
    const values = await Promise.all([1, 2, 3, 4, 5, 6].map((account) => kept.of(account)));
    expect(values.every((value) => typeof value === 'bigint' && value > 0n)).toBe(true);
  });
});

describe('when an account has a later position than the one being kept', () => {
  it('should leave it as it is', async () => {
    const kept = positions();
    const later = sortableWalPosition(parseWalPosition('FFFFFF/0'));
    await redis.set(`${prefix}:rw:40`, later);
    await kept.wrote(40);
    expect(await redis.get(`${prefix}:rw:40`)).toBe(later);
    expect(await redis.ttl(`${prefix}:rw:40`)).toBeGreaterThan(0);
  });
});

describe('when the reads of many accounts ask in one turn', () => {
  it('should ask Redis once, and say null for an account with no write kept', async () => {
    const kept = positions();
    await kept.wrote(50);
    const before = await calls();
    const values = await Promise.all([50, 51, 50].map((account) => kept.of(account)));
    expect(await since(before)).toEqual({ mget: 1 });
    expect(values[0]).toBe(values[2]);
    expect(typeof values[0]).toBe('bigint');
    expect(values[1]).toBeNull();
  });
});
