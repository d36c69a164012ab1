import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ApiProcess, spawnApi, spawnReadyWorker } from './support/api-process.js';
import { CLI_TIMEOUT, runCli } from './support/cli.js';
import { startCommand } from './support/command.js';
import {
  dropDatabase,
  type HttpResponse,
  httpRequest,
  REDIS_URL,
  type RequestOptions,
  startEnvironment,
  type TestEnvironment,
  waitForDrain,
} from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { freePort, stopProcess } from './support/processes.js';
import { type RedisCluster, redisClusterToolsMissing, startRedisCluster } from './support/redis-cluster.js';

/*
 * The service on a Redis Cluster of the test's own (3 masters, a replica
 * each; REDIS_URL=redis+cluster://...): an API process and a worker process
 * from the real entry points. Writes (v1, v2, a bulk file), the request
 * limiter, the queue dashboard and metrics work across the masters; then the
 * master serving the effects queue is killed while writes go on, its replica
 * takes over, and every write that was answered 200 is stored and its
 * effects applied. Then that queue's master, now without a replica, is
 * killed too and started again empty. The tests of this file run in order
 * on one cluster; `npm run reset` clearing every master is tried last, on a
 * cluster of its own.
 */

const missing = redisClusterToolsMissing();
if (missing)
  console.warn(`test/redis-cluster.test.ts skipped: ${missing} is not installed (a Redis Cluster needs redis-server and redis-cli)`);

let cluster: RedisCluster;
let env: TestEnvironment;
let api: ApiProcess;
let worker: Awaited<ReturnType<typeof spawnReadyWorker>>;
let token: string;

const request = (method: string, path: string, options?: RequestOptions): Promise<HttpResponse> =>
  httpRequest(api.baseUrl, method, path, options);
const NDJSON = { 'content-type': 'application/x-ndjson' };

const ids = z.object({ id: z.string() });

/** Runs an entry point with the test's database and prefix until it exits. */
async function exitOf(
  script: string,
  extra: Record<string, string>,
  args: string[] = [],
  config = env.config,
): Promise<{ code: number | null; output: string }> {
  const command = startCommand(process.execPath, ['--import', 'tsx', script, ...args], {
    ...process.env,
    DATABASE_URL: config.DATABASE_URL,
    QUEUE_PREFIX: config.QUEUE_PREFIX,
    LOG_LEVEL: 'silent',
    PORT: '0',
    ...extra,
  });
  const code = await new Promise<number | null>((resolve) => command.child.once('exit', resolve));
  return { code, output: command.output() };
}

/** Requests the API process let through without asking Redis for their account's limit. */
async function uncheckedRequests(): Promise<number> {
  const metrics = await request('GET', '/metrics');
  return Number(/^sync_rate_limit_unavailable_total\{limiter="account"[^}]*\} (\d+)/m.exec(metrics.text)?.[1] ?? 0);
}

beforeAll(async () => {
  if (missing) return;
  cluster = await startRedisCluster();
  env = await startEnvironment({ worker: false, env: { REDIS_URL: cluster.url } });
  [api, worker] = await Promise.all([spawnApi(env.config), spawnReadyWorker(env.config)]);
  const client = await env.newClient();
  const response = await request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  expect(response.status, response.text).toBe(200);
  token = response.body.access_token;
  for (const id of ['v1', 'v2', 'bulk', 'failover']) {
    const created = await request('PUT', '/api/v2/languages', { token, body: { language: { id } } });
    expect(created.status, created.text).toBe(200);
  }
}, 180_000);

afterAll(async () => {
  if (api) await stopProcess(api.child);
  if (worker) await stopProcess(worker.child);
  await env?.close().catch(() => undefined);
  await cluster?.destroy();
});

describe.skipIf(missing !== undefined)('when REDIS_URL names a cluster wrongly', () => {
  it('should say what is wrong in one line and exit 1', async () => {
    const result = await exitOf('bin/api.ts', { REDIS_URL: 'redis+cluster://127.0.0.1:7000,127.0.0.1' });
    expect(result.code).toBe(1);
    expect(result.output).toContain(
      'REDIS_URL: must be a redis:// or rediss:// URL, or redis+cluster://host:port,host:port,... ("127.0.0.1" is not host:port)',
    );
  }, 60_000);

  it('should name the nodes when none answers, or when they are no cluster, and exit 1', async () => {
    const closed = await freePort();
    const unreachable = await exitOf('bin/api.ts', { REDIS_URL: `redis+cluster://127.0.0.1:${closed}` });
    expect(unreachable).toEqual({
      code: 1,
      output: `Cannot reach Redis at cluster nodes 127.0.0.1:${closed} (REDIS_URL): no node could be connected to\n`,
    });
    const single = new URL(REDIS_URL);
    const notCluster = await exitOf('bin/api.ts', { REDIS_URL: `redis+cluster://${single.host}` });
    expect(notCluster).toEqual({
      code: 1,
      output: `Cannot reach Redis at cluster nodes ${single.host} (REDIS_URL): ERR This instance has cluster support disabled\n`,
    });
  }, 120_000);
});

describe.skipIf(missing !== undefined)('when Redis is a cluster of three masters with a replica each', () => {
  it('should store v1 and v2 writes and a bulk file, and apply their effects', async () => {
    for (let index = 0; index < 10; index += 1) {
      const v1 = await request('POST', '/api/v1/languages/v1/products', {
        token,
        body: { product: { id: `P${index}`, name: 'p', category_ids: ['C1', `D${index}`] } },
      });
      expect(v1.status, v1.text).toBe(200);
      const v2 = await request('PUT', '/api/v2/languages/v2/products', { token, body: { product: { id: `P${index}`, name: 'p' } } });
      expect(v2.status, v2.text).toBe(200);
    }
    const lines = Array.from({ length: 50 }, (_, index) => JSON.stringify({ product: { id: `B${index}`, name: 'b' } }));
    const upload = await request('POST', '/api/v2/languages/bulk/bulk', { token, raw: lines.join('\n'), headers: NDJSON });
    expect(upload.status, upload.text).toBe(202);
    const job = await pollUntil(
      async () => (await request('GET', upload.headers.get('location')!, { token })).body,
      (body) => body?.status === 'failed' || (body?.status === 'completed' && body.lines_applied === body.lines),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(job).toMatchObject({ status: 'completed', lines: 50, saved: 50, lines_applied: 50 });

    await waitForDrain(request, env.config, 60_000);
    // The effects of the v1 writes: a stub for each category they name, and their links.
    const stubs = await env.db.anyFirst(sql.type(ids)`
      SELECT record_id AS id FROM audit_log WHERE language_id = 'v1' AND kind = 'category' AND action = 'stub'
    `);
    expect([...stubs].sort()).toEqual(['C1', ...Array.from({ length: 10 }, (_, index) => `D${index}`)].sort());
    expect((await request('GET', '/api/v2/languages/v1/categories/D7', { token })).status).toBe(200);
    expect((await request('GET', '/api/v2/languages/v2/products/P9', { token })).body).toMatchObject({ id: 'P9' });
    expect((await request('GET', '/api/v2/languages/bulk/products/B49', { token })).body).toMatchObject({ id: 'B49' });
    // What reads the queues: the dashboard and the metrics' job counts, each queue in its own slot.
    const dashboard = await request('GET', '/admin/queues/api/queues', { headers: env.adminHeaders });
    expect(dashboard.status).toBe(200);
    const queueNames = ['bulk', 'effects', 'maintenance', 'webhooks'];
    expect(dashboard.body.queues.map((queue: { name: string }) => queue.name).sort()).toEqual(queueNames);
    const metrics = await request('GET', '/metrics');
    for (const name of queueNames) expect(metrics.text).toMatch(new RegExp(`^sync_queue_jobs\\{queue="${name}",state="completed"`, 'm'));
    expect(metrics.text).toMatch(/^sync_queue_jobs\{queue="effects",state="completed"[^}]*\} [1-9]/m);
  }, 120_000);

  it(
    'should refuse an account over its limit with 429, counting each account on its own master',
    async () => {
      const limited = await env.newClient();
      const set = await runCli(env.config.DATABASE_URL, 'set-limit', '--account', limited.account, '--rps', '2', '--burst', '0');
      expect(set, set.stderr).toMatchObject({ code: 0 });
      const limitedToken = (
        await request('POST', '/oauth/token', {
          body: { grant_type: 'client_credentials', client_id: limited.client_id, client_secret: limited.client_secret },
        })
      ).body.access_token as string;
      // The API process learns the override by Postgres NOTIFY: until then the account has the default limit.
      const refused = await pollUntil(
        async () => {
          // Both accounts' requests in the same ticks: one script call each, on their own masters.
          const responses = await Promise.all(
            Array.from({ length: 12 }, (_, index) =>
              request('GET', '/api/v2/languages', { token: index % 2 === 0 ? limitedToken : token }),
            ),
          );
          return responses;
        },
        (responses) => responses.some((response) => response.status === 429),
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      const limitedAnswers = refused.filter((_, index) => index % 2 === 0);
      const otherAnswers = refused.filter((_, index) => index % 2 === 1);
      expect(limitedAnswers.map((response) => response.status)).toContain(429);
      const tooMany = limitedAnswers.find((response) => response.status === 429)!;
      expect(Number(tooMany.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(tooMany.headers.get('ratelimit-policy')).toBe('2;w=1');
      expect(otherAnswers.map((response) => response.status)).toEqual(Array(6).fill(200));
      expect(Number(otherAnswers[0]!.headers.get('ratelimit-remaining'))).toBeGreaterThan(0);
    },
    CLI_TIMEOUT + 60_000,
  );

  it('should fail over when the master of the effects queue is killed mid-load, losing no accepted write', async () => {
    const victim = await cluster.masterOf(`${env.config.QUEUE_PREFIX}:{effects}`);
    const accepted: number[] = [];
    const statuses = new Map<number, number>();
    let killedAt = -1;
    let failedOverAt = -1;
    let failure: unknown;
    const failedOver = (async () => {
      // Mid-load: once a first batch of writes is in.
      await pollUntil(
        async () => accepted.length,
        (done) => done >= 40,
        { timeoutMs: 60_000, intervalMs: 10 },
      );
      killedAt = accepted.length;
      await cluster.kill(victim);
      await cluster.waitUntilOk(30_000);
      failedOverAt = accepted.length;
    })().catch((error: unknown) => {
      failure = error;
    });
    for (let index = 0; failure === undefined && (failedOverAt < 0 || index < failedOverAt + 40); index += 1) {
      const response = await request('POST', '/api/v1/languages/failover/products', {
        token,
        body: { product: { id: `F${index}`, name: 'f', category_ids: [`K${index}`] } },
      });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 200) accepted.push(index);
    }
    await failedOver;
    expect(failure).toBeUndefined();
    expect(killedAt).toBeGreaterThanOrEqual(40);
    // The replica took the dead master's slots.
    expect(await cluster.masterOf(`${env.config.QUEUE_PREFIX}:{effects}`)).not.toBe(victim);
    // Writes never wait on Redis (the outbox in Postgres keeps the work): they went on being accepted throughout.
    expect(Object.fromEntries(statuses)).toEqual({ 200: accepted.length });

    await waitForDrain(request, env.config, 120_000);
    const stored = await env.db.anyFirst(sql.type(ids)`
      SELECT record_id AS id FROM audit_log WHERE language_id = 'failover' AND kind = 'product' AND action = 'create'
    `);
    expect([...stored].sort()).toEqual(accepted.map((index) => `F${index}`).sort());
    // Each accepted write's effect applied once: one stub category per product.
    const stubs = await env.db.anyFirst(sql.type(ids)`
      SELECT record_id AS id FROM audit_log WHERE language_id = 'failover' AND kind = 'category' AND action = 'stub'
    `);
    expect([...stubs].sort()).toEqual(accepted.map((index) => `K${index}`).sort());
    // The worker process went on through the failover.
    expect(worker.child.exitCode).toBeNull();
    expect(api.child.exitCode).toBeNull();
    const health = await request('GET', '/healthz');
    expect(health.status).toBe(200);
  }, 240_000);
});

describe.skipIf(missing !== undefined)('when a master without a replica is lost (after the failover above)', () => {
  it('should accept writes while its slots are down, and apply them once it is back empty', async () => {
    // The failover above left the effects queue's master without a replica: losing it leaves its slots unserved,
    // and the cluster refuses commands (cluster-require-full-coverage) until it is back.
    const alone = await cluster.masterOf(`${env.config.QUEUE_PREFIX}:{effects}`);
    const uncheckedBefore = await uncheckedRequests();
    await cluster.kill(alone);
    await cluster.waitUntilDown();
    const accepted: number[] = [];
    const statuses = new Map<number, number>();
    for (let index = 0; index < 30; index += 1) {
      const response = await request('POST', '/api/v1/languages/failover/products', {
        token,
        body: { product: { id: `G${index}`, name: 'g', category_ids: [`L${index}`] } },
      });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 200) accepted.push(index);
    }
    // The outbox keeps the work; the limit goes unchecked meanwhile (sync_rate_limit_unavailable_total).
    expect(Object.fromEntries(statuses)).toEqual({ 200: 30 });
    expect(await uncheckedRequests()).toBeGreaterThanOrEqual(uncheckedBefore + 30);
    const pending = await request('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
    expect(pending.body.pending).toBeGreaterThan(0);
    // Readiness pings one node, which answers: the service still takes writes.
    expect((await request('GET', '/readyz')).body).toMatchObject({ status: 'ok', redis: 'ok' });
    // A process starting now refuses to, in one line.
    const starting = await exitOf('bin/api.ts', { REDIS_URL: cluster.url });
    expect(starting.code).toBe(1);
    expect(starting.output).toBe(
      `Cannot reach Redis at cluster nodes ${cluster.url.slice('redis+cluster://'.length)} (REDIS_URL): the cluster does not serve every slot (cluster_state is not ok)\n`,
    );

    // Back with nothing (no persistence): the queue's jobs of those slots are gone, the sweeper makes them again.
    await cluster.restart(alone);
    await cluster.waitUntilOk();
    await waitForDrain(request, env.config, 120_000);
    const stubs = await env.db.anyFirst(sql.type(ids)`
      SELECT record_id AS id FROM audit_log WHERE language_id = 'failover' AND kind = 'category' AND action = 'stub' AND record_id LIKE 'L%'
    `);
    expect([...stubs].sort()).toEqual(accepted.map((index) => `L${index}`).sort());
    expect(worker.child.exitCode).toBeNull();
  }, 240_000);
});

describe.skipIf(missing !== undefined)('when a development database on a cluster is reset', () => {
  it('should remove the queues and limit counters of its prefix from every master', async () => {
    // A cluster of its own, as a development database has: the one above has been through failovers.
    const own = await startRedisCluster();
    const ownEnv = await startEnvironment({ worker: false, env: { REDIS_URL: own.url } });
    try {
      const [ownApi, ownWorker] = await Promise.all([spawnApi(ownEnv.config), spawnReadyWorker(ownEnv.config)]);
      try {
        const client = await ownEnv.newClient();
        const issued = await httpRequest(ownApi.baseUrl, 'POST', '/oauth/token', {
          body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
        });
        expect(issued.status, issued.text).toBe(200);
        const ownToken = issued.body.access_token as string;
        const language = await httpRequest(ownApi.baseUrl, 'PUT', '/api/v2/languages', {
          token: ownToken,
          body: { language: { id: 'r' } },
        });
        expect(language.status, language.text).toBe(200);
        const written = await httpRequest(ownApi.baseUrl, 'POST', '/api/v1/languages/r/products', {
          token: ownToken,
          body: { product: { id: 'p1', name: 'Reset me', category_ids: ['c1'] } },
        });
        expect(written.status, written.text).toBe(200);
      } finally {
        await stopProcess(ownApi.child);
        await stopProcess(ownWorker.child);
      }
      await ownEnv.close();
      const pattern = `${ownEnv.config.QUEUE_PREFIX}:*`;
      const before = [...(await own.keysByMaster(pattern)).values()].flat();
      // Request counters last a second, tokens issued a minute; the sign-in guard's trust marks (7 days) are left.
      expect(before.filter((key) => key.includes(':signin:{oauth_token}:trusted:'))).not.toEqual([]);
      expect(before.filter((key) => key.includes(':{effects}:effects:'))).not.toEqual([]);
      const reset = await exitOf('bin/reset.ts', { REDIS_URL: own.url, NODE_ENV: 'development' }, ['--yes'], ownEnv.config);
      expect(reset, reset.output).toMatchObject({ code: 0 });
      expect(reset.output).toContain('queues and limit counters of prefix');
      const after = await own.keysByMaster(pattern);
      expect(Object.fromEntries(after)).toEqual(Object.fromEntries([...after.keys()].map((port) => [port, []])));
    } finally {
      await dropDatabase(ownEnv.databaseName);
      await own.destroy();
    }
  }, 180_000);
});
