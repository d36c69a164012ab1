import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnApi, spawnReadyWorker } from './support/api-process.js';
import { type Credentials, httpRequest, type RequestOptions, startEnvironment, type TestEnvironment } from './support/harness.js';
import { stopProcess } from './support/processes.js';

/*
 * One account's flood of writes and a large bulk file must
 * not delay another account's writes and effects beyond a stated bound
 * (docs/consistency.md, "Fair share"). The API and the worker run as
 * processes of their own (this process only sends the load), with the
 * account request limits out of reach, so the scheduling alone is measured.
 *
 * B writes a product with 3 new category ids every 100 ms; its write latency
 * and its time to effects (from sending the write until GET shows the 3
 * links, which the worker applies) are measured with A idle, then with A
 * flooding: 8 connections writing products with 5 category ids each as fast
 * as they are answered, and a 40,000-line bulk file.
 */

const B_WRITES = 30;
const BULK_LINES = 40_000;
const FLOOD_CONNECTIONS = 8;
/** The bounds the note states (docs/consistency.md), generous for a loaded 2-core machine. */
const WRITE_P99_BOUND_MS = 2_000;
const EFFECTS_P99_BOUND_MS = 5_000;

let env: TestEnvironment;
const children: ChildProcess[] = [];
let base: string;
let tokenA: string;
let tokenB: string;

const send = (method: string, path: string, options: RequestOptions) => httpRequest(base, method, path, options);

async function tokenOf(client: Credentials): Promise<string> {
  const response = await send('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  expect(response.status, response.text).toBe(200);
  return response.body.access_token;
}

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  const api = await spawnApi(env.config);
  const worker = await spawnReadyWorker(env.config);
  children.push(api.child, worker.child);
  base = api.baseUrl;
  [tokenA, tokenB] = await Promise.all([tokenOf(await env.newClient()), tokenOf(await env.newClient())]);
  for (const [token, id] of [
    [tokenA, 'la'],
    [tokenA, 'lb'],
    [tokenB, 'nl'],
  ] as const) {
    expect((await send('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: id } } })).status).toBe(200);
  }
}, 120_000);

afterAll(async () => {
  for (const child of children) await stopProcess(child);
  await env?.close();
});

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

interface Figures {
  writeP50: number;
  writeP99: number;
  effectsP50: number;
  effectsP99: number;
}

/** B's writes, one every 100 ms, each followed until its links are readable. */
async function measureB(round: string): Promise<Figures> {
  const writes: number[] = [];
  const effects: Array<Promise<number>> = [];
  for (let index = 0; index < B_WRITES; index += 1) {
    const id = `${round}-P${index}`;
    const categories = [1, 2, 3].map((n) => `${round}-C${index}-${n}`);
    const started = Date.now();
    const response = await send('POST', '/api/v1/languages/nl/products', {
      token: tokenB,
      body: { product: { id, name: `Product ${id}`, category_ids: categories } },
    });
    expect(response.status, response.text).toBe(200);
    writes.push(Date.now() - started);
    effects.push(
      (async () => {
        for (;;) {
          const read = await send('GET', `/api/v2/languages/nl/products/${id}`, { token: tokenB });
          if (read.status === 200 && read.body.category_ids?.length === 3) return Date.now() - started;
          if (Date.now() - started > 60_000) throw new Error(`the effects of ${id} did not appear within 60 s`);
          await sleep(25);
        }
      })(),
    );
    await sleep(Math.max(0, started + 100 - Date.now()));
  }
  const toEffects = await Promise.all(effects);
  return {
    writeP50: percentile(writes, 50),
    writeP99: percentile(writes, 99),
    effectsP50: percentile(toEffects, 50),
    effectsP99: percentile(toEffects, 99),
  };
}

/** A's flood: connections writing products with 5 category ids each, until `stop` says so. */
async function floodA(stop: () => boolean): Promise<number> {
  let written = 0;
  await Promise.all(
    Array.from({ length: FLOOD_CONNECTIONS }, async (_, connection) => {
      for (let index = 0; !stop(); index += 1) {
        const id = `A${connection}-${index}`;
        const category_ids = [1, 2, 3, 4, 5].map((n) => `AC${(index * 5 + n) % 2_000}`);
        const response = await send('POST', '/api/v1/languages/la/products', {
          token: tokenA,
          body: { product: { id, name: id, category_ids } },
        });
        expect(response.status).toBe(200);
        written += 1;
      }
    }),
  );
  return written;
}

describe('when account A floods writes and a large bulk file while account B writes every 100 ms', () => {
  it("should keep B's write p99 and time to effects within the stated bounds", async () => {
    const baseline = await measureB('idle');

    const lines = Array.from(
      { length: BULK_LINES },
      (_, index) =>
        `${JSON.stringify({ product: { id: `BP${index}`, name: `Bulk ${index}`, category_ids: [`BC${index % 500}`, `BD${index % 37}`] } })}\n`,
    ).join('');
    const upload = await send('POST', '/api/v1/languages/lb/bulk', {
      token: tokenA,
      raw: lines,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    let flooding = true;
    const flood = floodA(() => !flooding);
    // Let the flood build a backlog of effects before B starts.
    await sleep(2_000);
    const loaded = await measureB('flood');
    // Read while A still floods: once it stops, a worker that keeps up may have applied everything by the time of
    // the read, and the check would say nothing about the load B was measured under.
    const backlog = await send('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
    flooding = false;
    const written = await flood;

    // The figures the lead's note quotes.
    process.stdout.write(
      `fair share: B idle ${JSON.stringify(baseline)}; B during flood ${JSON.stringify(loaded)}; A wrote ${written} products meanwhile, pending at the end of it: ${backlog.text}\n`,
    );
    expect(backlog.body.pending, 'A really built a backlog').toBeGreaterThan(0);
    expect(loaded.writeP99).toBeLessThanOrEqual(WRITE_P99_BOUND_MS);
    expect(loaded.effectsP99).toBeLessThanOrEqual(EFFECTS_P99_BOUND_MS);
  }, 240_000);
});
