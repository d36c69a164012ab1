import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainWithWorker, type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { sample } from './support/metrics.js';
import { pollUntil } from './support/poll.js';
import { type PrivatePostgres, startPrivatePostgres } from './support/postgres.js';
import { freePort } from './support/processes.js';
import { type StreamingReplica, startStreamingReplica } from './support/replica.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * Read replicas: a private primary, a streaming replica of it (pg_basebackup),
 * and the API and worker on the primary with DATABASE_REPLICA_URLS naming the
 * replica. What a client sees is always its own writes; where a read ran shows
 * in /metrics.
 */

const hasServerTools = (() => {
  try {
    for (const tool of ['initdb', 'pg_ctl', 'pg_basebackup']) execFileSync('which', [tool], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

let primary: PrivatePostgres;
let replica: StreamingReplica;
let env: TestEnvironment;

beforeAll(async () => {
  if (!hasServerTools) return;
  primary = await startPrivatePostgres();
  replica = await startStreamingReplica(primary);
  env = await startEnvironment({ server: primary.url, replicas: [replica.url] });
}, 120_000);
afterAll(async () => {
  await env?.close().catch(() => undefined);
  await replica?.destroy();
  await primary?.destroy();
});

const metrics = async () => (await env.request('GET', '/metrics')).text;
/** Reads answered so far, by where they ran. */
const reads = async () => {
  const text = await metrics();
  return {
    primary: sample(text, 'sync_reads_total', { target: 'primary' }) ?? 0,
    replica: sample(text, 'sync_reads_total', { target: 'replica' }) ?? 0,
  };
};
const replicaName = () => new URL(replica.url).host;

/** A product and the first page of products, as the shop sees them. */
const readBack = async (shop: Shop, id: string): Promise<[HttpResponse, HttpResponse]> => [
  await shop.get(`/products/${id}`),
  await shop.get('/products?per_page=100'),
];

describe.skipIf(!hasServerTools)('when a client writes while the replica is held back', () => {
  it('should read its write from the primary, then from the replica once it has replayed it', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'p0', name: 'Before' });
    await replica.caughtUp();
    await replica.pauseReplay();
    try {
      await shop.save('product', { id: 'p1', name: 'Held back' });
      const before = await reads();
      const [one, list] = await readBack(shop, 'p1');
      expect(one.status).toBe(200);
      expect(one.body.name).toBe('Held back');
      expect(list.status).toBe(200);
      expect(list.body.data.map((item: { id: string }) => item.id).sort()).toEqual(['p0', 'p1']);
      const after = await reads();
      expect(after.primary - before.primary).toBe(2);
      expect(after.replica - before.replica).toBe(0);
    } finally {
      await replica.resumeReplay();
    }
    await replica.caughtUp();
    // The API learns the replica's position within REPLICA_POLL_MS: reads go there again.
    const seen = await pollUntil(
      async () => {
        const before = await reads();
        const [one, list] = await readBack(shop, 'p1');
        const after = await reads();
        return { one, list, onReplica: after.replica - before.replica };
      },
      (value) => value.onReplica === 2,
      { timeoutMs: 10_000 },
    );
    expect(seen.onReplica).toBe(2);
    expect(seen.one.status).toBe(200);
    expect(seen.one.body.name).toBe('Held back');
    expect(seen.list.body.data.map((item: { id: string }) => item.id).sort()).toEqual(['p0', 'p1']);
  });
});

describe.skipIf(!hasServerTools)('when another account reads while the replica is held back', () => {
  it('should serve the account that has not written since from the replica', async () => {
    const quiet = await openShop(env);
    await quiet.save('product', { id: 'q1', name: 'Quiet' });
    const busy = await openShop(env);
    await env.drain();
    await replica.caughtUp();
    // Until the API has seen the replica past the quiet account's writes (the worker's included), within REPLICA_POLL_MS.
    await pollUntil(
      async () => {
        const before = await reads();
        await quiet.get('/products/q1');
        return (await reads()).replica - before.replica;
      },
      (onReplica) => onReplica === 1,
      { timeoutMs: 10_000 },
    );
    await replica.pauseReplay();
    try {
      await busy.save('product', { id: 'b1', name: 'Busy' });
      const before = await reads();
      const [quietOne, quietList] = await readBack(quiet, 'q1');
      const afterQuiet = await reads();
      const [busyOne] = await readBack(busy, 'b1');
      const afterBusy = await reads();
      expect(quietOne.body.name).toBe('Quiet');
      expect(quietList.body.data.map((item: { id: string }) => item.id)).toEqual(['q1']);
      expect(afterQuiet.replica - before.replica).toBe(2);
      expect(busyOne.body.name).toBe('Busy');
      expect(afterBusy.primary - afterQuiet.primary).toBe(2);
    } finally {
      await replica.resumeReplay();
    }
  });
});

describe.skipIf(!hasServerTools)('when replay is paused and writes go on', () => {
  it('should show the replica lag in /metrics, and none once it has caught up', async () => {
    const shop = await openShop(env);
    await replica.caughtUp();
    await replica.pauseReplay();
    try {
      for (let index = 0; index < 20; index += 1) await shop.save('product', { id: `lag${index}`, name: 'x'.repeat(200) });
      const lag = await pollUntil(
        async () => sample(await metrics(), 'sync_replica_lag_bytes', { replica: replicaName() }) ?? 0,
        (bytes) => bytes > 0,
        { timeoutMs: 10_000 },
      );
      expect(lag).toBeGreaterThan(0);
    } finally {
      await replica.resumeReplay();
    }
    await env.drain();
    await replica.caughtUp();
    const caughtUp = await pollUntil(
      async () => sample(await metrics(), 'sync_replica_lag_bytes', { replica: replicaName() }) ?? -1,
      (bytes) => bytes === 0,
      { timeoutMs: 10_000 },
    );
    expect(caughtUp).toBe(0);
  });
});

describe.skipIf(!hasServerTools)('when the replica stops in the middle of reads', () => {
  it('should answer every read from the primary meanwhile, and use the replica again once it is back', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'c1', name: 'Crash' });
    await replica.caughtUp();
    const statuses: number[] = [];
    const wrong: string[] = [];
    let stop = false;
    const reader = async () => {
      while (!stop) {
        const [one, list] = await readBack(shop, 'c1');
        statuses.push(one.status, list.status);
        if (one.body?.name !== 'Crash') wrong.push(one.text);
        if (list.body?.data?.[0]?.id !== 'c1') wrong.push(list.text);
      }
    };
    const loops = [reader(), reader(), reader()];
    try {
      await pollUntil(
        async () => statuses.length,
        (count) => count >= 30,
        { timeoutMs: 10_000 },
      );
      await replica.crash();
      const afterCrash = statuses.length;
      await pollUntil(
        async () => statuses.length,
        (count) => count >= afterCrash + 60,
        { timeoutMs: 20_000 },
      );
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    expect(statuses.length).toBeGreaterThan(90);
    // While it is down the replica is left out (a read in flight on it as it went was read again on the primary).
    expect(sample(await metrics(), 'sync_replica_up', { replica: replicaName() })).toBe(0);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(wrong).toEqual([]);

    await replica.start();
    await replica.caughtUp();
    const resumed = await pollUntil(
      async () => {
        const before = await reads();
        const [one] = await readBack(shop, 'c1');
        const after = await reads();
        return { status: one.status, onReplica: after.replica - before.replica };
      },
      (value) => value.onReplica === 2,
      { timeoutMs: 15_000 },
    );
    expect(resumed).toEqual({ status: 200, onReplica: 2 });
  });
});

describe.skipIf(!hasServerTools)('when the worker applies effects while the replica is held back', () => {
  let quietEnv: TestEnvironment;
  beforeAll(async () => {
    // No worker of its own: the test runs one when the replica already has the write but not its effects.
    quietEnv = await startEnvironment({ server: primary.url, replicas: [replica.url], worker: false });
  }, 60_000);
  afterAll(async () => {
    await quietEnv?.close();
  });

  it('should show a stub made by the worker once sync-status has drained', async () => {
    const shop = await openShop(quietEnv);
    await shop.save('category', { id: 'child', name: 'Child', parent_category_id: 'parent' });
    await replica.caughtUp();
    // Until the API has seen the replica past the write (it reads it there, and finds no parent yet).
    const before = await pollUntil(
      async () => {
        const counted = (await quietEnv.request('GET', '/metrics')).text;
        const parent = await shop.get('/categories/parent');
        const after = (await quietEnv.request('GET', '/metrics')).text;
        return {
          status: parent.status,
          onReplica:
            (sample(after, 'sync_reads_total', { target: 'replica' }) ?? 0) -
            (sample(counted, 'sync_reads_total', { target: 'replica' }) ?? 0),
        };
      },
      (value) => value.onReplica === 1,
      { timeoutMs: 10_000 },
    );
    expect(before).toEqual({ status: 404, onReplica: 1 });
    await replica.pauseReplay();
    try {
      await drainWithWorker(quietEnv);
      const parent = await shop.get('/categories/parent');
      expect(parent.status).toBe(200);
      expect(parent.body).toMatchObject({ id: 'parent', name: null });
    } finally {
      await replica.resumeReplay();
    }
  });
});

describe.skipIf(!hasServerTools)('when a replica cannot be reached from the start', () => {
  let lonely: TestEnvironment;
  beforeAll(async () => {
    // Nothing listens on that port: the API starts anyway and leaves the replica out.
    lonely = await startEnvironment({ server: primary.url, replicas: [`postgres://postgres@127.0.0.1:${await freePort()}`] });
  }, 60_000);
  afterAll(async () => {
    await lonely?.close();
  });

  it('should answer every read from the primary and show the replica down', async () => {
    const shop = await openShop(lonely);
    await shop.save('product', { id: 'x1', name: 'Alone' });
    const [one, list] = await readBack(shop, 'x1');
    expect([one.status, one.body.name, list.status, list.body.data.length]).toEqual([200, 'Alone', 200, 1]);
    const text = (await lonely.request('GET', '/metrics')).text;
    expect(sample(text, 'sync_reads_total', { target: 'replica' })).toBe(0);
    expect(sample(text, 'sync_reads_total', { target: 'primary' })).toBe(2);
    expect(sample(text, 'sync_replica_up')).toBe(0);
  });
});
