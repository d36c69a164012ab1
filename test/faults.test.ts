import type { ChildProcess } from 'node:child_process';
import { sql } from 'slonik';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applierLockHolders } from '../sync/locks.js';
import { startWorker } from '../worker/worker.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { freePort, spawnWorker, startRedis, stopProcess } from './support/processes.js';
import { compare, generate, rng, type Sent, send } from './support/scenario.js';

const SEED = Number(process.env['MODEL_SEED'] ?? Date.now() % 1_000_000);

let env: TestEnvironment | undefined;
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) await stopProcess(child);
  await env?.close();
  env = undefined;
});

async function prepare(environment: TestEnvironment, languageId: string) {
  const client = await environment.newClient();
  const tokenResponse = await environment.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  const token = tokenResponse.body.access_token as string;
  const created = await environment.request('POST', '/api/v1/languages', {
    token,
    body: { language: { id: languageId, name: 'L', code: 'xx' } },
  });
  expect(created.status).toBe(200);
  const accountId = await environment.db.oneFirst(
    sql.type(z.object({ id: z.number() }))`SELECT id FROM accounts WHERE name = ${client.account}`,
  );
  return { token, accountId };
}

async function expectModel(environment: TestEnvironment, languageId: string, accountId: number, sent: Sent[], seed: number) {
  await environment.drain(60_000);
  const result = await compare(environment, languageId, accountId, sent);
  const context = `seed ${seed}`;
  expect(result.records.actual, context).toEqual(result.records.expected);
  expect(result.links.actual, context).toEqual(result.links.expected);
  expect(result.audit.actual, context).toEqual(result.audit.expected);
}

describe('when a worker is killed with SIGKILL in the middle of a batch', () => {
  it('should apply every change exactly once after another worker takes over', async () => {
    console.log(`fault test seed ${SEED}`);
    env = await startEnvironment({ worker: false });
    const { token, accountId } = await prepare(env, 'kill');
    const sent: Sent[] = [];
    for (const [index, operation] of generate(rng(SEED), 400, undefined, { v2Surface: true }).entries())
      sent.push(await send(env, token, 'kill', operation, `k-${index}`));

    const victim = spawnWorker(env.config);
    children.push(victim);
    // The applier holds its lock (sync/locks.ts) for exactly the life of a batch transaction.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const inBatch = (await applierLockHolders(env.db)).length > 0;
      if (inBatch) break;
      if (Date.now() > deadline) throw new Error('the worker never started a batch');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await stopProcess(victim, 'SIGKILL');
    const pending = await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
    expect(pending.body.pending).toBeGreaterThan(0);

    const survivor = spawnWorker(env.config);
    children.push(survivor);
    await expectModel(env, 'kill', accountId, sent, SEED);
  }, 120_000);
});

describe('when Redis stops while writes are accepted and comes back empty', () => {
  it('should still apply every accepted change once', async () => {
    const port = await freePort();
    let redis = await startRedis(port);
    children.push(redis);
    env = await startEnvironment({ worker: false, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    const worker = await startWorker(env.config);
    try {
      const { token, accountId } = await prepare(env, 'redis');
      const operations = generate(rng(SEED + 1), 240);
      const sent: Sent[] = [];
      for (const [index, operation] of operations.entries()) {
        if (index === 80) await stopProcess(redis, 'SIGKILL');
        if (index === 160) {
          redis = await startRedis(port);
          children.push(redis);
        }
        sent.push(await send(env, token, 'redis', operation, `r-${index}`));
      }
      await expectModel(env, 'redis', accountId, sent, SEED + 1);
    } finally {
      await worker.close();
    }
  }, 120_000);
});
