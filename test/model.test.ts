import { isDeepStrictEqual } from 'node:util';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RunningWorker, startWorker } from '../worker/worker.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { type CompareOptions, compare, generate, rng, type Sent, send } from './support/scenario.js';

const BASE_SEED = Number(process.env['MODEL_SEED'] ?? Date.now() % 1_000_000);
const RUNS = Number(process.env['MODEL_RUNS'] ?? 4);
const OPERATIONS = Number(process.env['MODEL_OPERATIONS'] ?? 60);

let env: TestEnvironment;
let secondWorker: RunningWorker | undefined;

async function setUp(seed: number) {
  const client = await env.newClient();
  const tokenResponse = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  const token = tokenResponse.body.access_token as string;
  const languageId = `lang-${seed}`;
  const created = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: languageId, name: 'L', code: 'xx' } } });
  expect(created.status).toBe(200);
  const accountId = await env.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM accounts WHERE name = ${client.account}`);
  return { token, languageId, accountId };
}

async function check(
  seed: number,
  languageId: string,
  accountId: number,
  sent: Sent[],
  options: CompareOptions & { counts?: boolean; drainMs?: number } = {},
) {
  await env.drain(options.drainMs);
  const result = await compare(env, languageId, accountId, sent, options);
  const context = `seed ${seed} (rerun with MODEL_SEED=${seed} MODEL_RUNS=1)`;
  const matches =
    isDeepStrictEqual(result.records.actual, result.records.expected) &&
    isDeepStrictEqual(result.links.actual, result.links.expected) &&
    isDeepStrictEqual(result.audit.actual, result.audit.expected);
  if (!matches) console.log(`${context}: requests in service order:\n${result.history.join('\n')}`);
  expect(result.records.actual, context).toEqual(result.records.expected);
  expect(result.links.actual, context).toEqual(result.links.expected);
  expect(result.audit.actual, context).toEqual(result.audit.expected);
  if (options.counts) expect(result.counts.counter, context).toEqual(result.counts.rows);
}

beforeAll(async () => {
  env = await startEnvironment();
  console.log(`model-based test: base seed ${BASE_SEED}, ${RUNS} runs of ${OPERATIONS} operations`);
});
afterAll(async () => {
  await secondWorker?.close();
  await env.close();
});

const seeds = Array.from({ length: RUNS }, (_, index) => BASE_SEED + index);

describe('when random requests are sent one after another', () => {
  it.each(seeds)('should end, once drained, in the state of the serial model (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed);
    const operations = generate(rng(seed), OPERATIONS);
    const sent: Sent[] = [];
    for (const [index, operation] of operations.entries()) sent.push(await send(env, token, languageId, operation, `s${seed}-${index}`));
    await check(seed, languageId, accountId, sent);
  });
});

describe('when random requests are sent concurrently', () => {
  it.each(seeds)('should equal the serial model in the order the service numbered them (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 10_000);
    const operations = generate(rng(seed + 10_000), OPERATIONS);
    const sent: Sent[] = [];
    for (let start = 0; start < operations.length; start += 6) {
      const chunk = operations.slice(start, start + 6);
      sent.push(
        ...(await Promise.all(chunk.map((operation, offset) => send(env, token, languageId, operation, `c${seed}-${start + offset}`)))),
      );
    }
    await check(seed + 10_000, languageId, accountId, sent);
  });
});

describe('when two worker processes share the work', () => {
  it.each(seeds)('should apply every change once and equal the serial model (seed %i)', async (seed) => {
    secondWorker ??= await startWorker(env.config);
    const { token, languageId, accountId } = await setUp(seed + 20_000);
    const operations = generate(rng(seed + 20_000), OPERATIONS);
    const sent: Sent[] = [];
    for (let start = 0; start < operations.length; start += 4) {
      const chunk = operations.slice(start, start + 4);
      sent.push(
        ...(await Promise.all(chunk.map((operation, offset) => send(env, token, languageId, operation, `w${seed}-${start + offset}`)))),
      );
    }
    await check(seed + 20_000, languageId, accountId, sent);
  });
});

describe('when the worker is stopped while requests are accepted', () => {
  it.each(seeds)('should catch up from the outbox and equal the serial model (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 30_000);
    await env.worker?.close();
    await secondWorker?.close();
    secondWorker = undefined;
    const operations = generate(rng(seed + 30_000), OPERATIONS);
    const sent: Sent[] = [];
    for (const [index, operation] of operations.entries()) sent.push(await send(env, token, languageId, operation, `l${seed}-${index}`));
    const status = await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
    expect(status.body.pending).toBeGreaterThan(0);
    const worker = await startWorker(env.config);
    try {
      await check(seed + 30_000, languageId, accountId, sent);
    } finally {
      await worker.close();
    }
  });
});

/*
 * v1 and v2 mixed: v2 PUTs of products (brand_id, custom_attributes) and
 * categories (parent_category_id), and v2 assignments, among v1 writes and
 * deletes. Requests go one at a time, so the order they were sent in is the
 * service's order: every acknowledged request is replayed, and the model
 * decides which ones must leave no audit entry (an assignment that changes
 * nothing). The v2 list totals' counter must equal the live rows.
 */
describe('when random v1 and v2 requests are sent one after another', () => {
  it.each(seeds)('should end, once drained, in the state of the serial model (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 40_000);
    // The blocks above may have stopped the environment's worker: this block runs its own.
    const worker = await startWorker(env.config);
    try {
      const operations = generate(rng(seed + 40_000), OPERATIONS, undefined, { v2: true });
      const sent: Sent[] = [];
      for (const [index, operation] of operations.entries()) sent.push(await send(env, token, languageId, operation, `m${seed}-${index}`));
      await check(seed + 40_000, languageId, accountId, sent, { order: 'sent', counts: true });
    } finally {
      await worker.close();
    }
  });
});

/*
 * The same mix sent concurrently: replayed in the order the service numbered
 * the requests (an assignment that left no audit entry changed nothing and
 * is left out).
 */
describe('when random v1 and v2 requests are sent concurrently', () => {
  it.each(seeds)('should equal the serial model in the order the service numbered them (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 60_000);
    const worker = await startWorker(env.config);
    try {
      const operations = generate(rng(seed + 60_000), OPERATIONS, undefined, { v2: true });
      const sent: Sent[] = [];
      for (let start = 0; start < operations.length; start += 6) {
        const chunk = operations.slice(start, start + 6);
        sent.push(
          ...(await Promise.all(chunk.map((operation, offset) => send(env, token, languageId, operation, `k${seed}-${start + offset}`)))),
        );
      }
      await check(seed + 60_000, languageId, accountId, sent, { counts: true });
    } finally {
      await worker.close();
    }
  });
});

describe('when the worker is stopped while random v1 and v2 requests are accepted', () => {
  it.each(seeds)('should catch up from the outbox and equal the serial model (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 50_000);
    await env.worker?.close();
    await secondWorker?.close();
    secondWorker = undefined;
    const operations = generate(rng(seed + 50_000), OPERATIONS, undefined, { v2: true });
    const sent: Sent[] = [];
    for (const [index, operation] of operations.entries()) sent.push(await send(env, token, languageId, operation, `n${seed}-${index}`));
    const status = await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
    expect(status.body.pending).toBeGreaterThan(0);
    const worker = await startWorker(env.config);
    try {
      await check(seed + 50_000, languageId, accountId, sent, { order: 'sent', counts: true });
    } finally {
      await worker.close();
    }
  });
});

/*
 * The rest of v2 (interface §13-21): PUTs and DELETEs of every kind, order and
 * cart line writes, related-product links and global unsubscribes, mixed
 * with v1 writes and deletes. One at a time (the model decides which
 * requests leave no audit entry), concurrently (replayed in the service's
 * numbering), and with the worker stopped for the whole run.
 */
describe('when random requests of the whole v2 surface are sent one after another', () => {
  it.each(seeds)('should end, once drained, in the state of the serial model (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 70_000);
    const worker = await startWorker(env.config);
    try {
      const operations = generate(rng(seed + 70_000), OPERATIONS, undefined, { v2Surface: true });
      const sent: Sent[] = [];
      for (const [index, operation] of operations.entries()) sent.push(await send(env, token, languageId, operation, `x${seed}-${index}`));
      await check(seed + 70_000, languageId, accountId, sent, { order: 'sent', counts: true });
    } finally {
      await worker.close();
    }
  });
});

describe('when random requests of the whole v2 surface are sent concurrently', () => {
  it.each(seeds)('should equal the serial model in the order the service numbered them (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 80_000);
    const worker = await startWorker(env.config);
    try {
      const operations = generate(rng(seed + 80_000), OPERATIONS, undefined, { v2Surface: true });
      const sent: Sent[] = [];
      for (let start = 0; start < operations.length; start += 6) {
        const chunk = operations.slice(start, start + 6);
        sent.push(
          ...(await Promise.all(chunk.map((operation, offset) => send(env, token, languageId, operation, `y${seed}-${start + offset}`)))),
        );
      }
      await check(seed + 80_000, languageId, accountId, sent, { counts: true });
    } finally {
      await worker.close();
    }
  });
});

describe('when the worker is stopped while random requests of the whole v2 surface are accepted', () => {
  it.each(seeds)('should catch up from the outbox and equal the serial model (seed %i)', async (seed) => {
    const { token, languageId, accountId } = await setUp(seed + 90_000);
    await env.worker?.close();
    await secondWorker?.close();
    secondWorker = undefined;
    const operations = generate(rng(seed + 90_000), OPERATIONS, undefined, { v2Surface: true });
    const sent: Sent[] = [];
    for (const [index, operation] of operations.entries()) sent.push(await send(env, token, languageId, operation, `z${seed}-${index}`));
    const worker = await startWorker(env.config);
    try {
      await check(seed + 90_000, languageId, accountId, sent, { order: 'sent', counts: true });
    } finally {
      await worker.close();
    }
  });
});

/*
 * Changes split into slices: with a slice of two ids, nearly every
 * change with a list, and every delete with a cascade, is applied over several
 * transactions, each resuming where the last one stopped. The serial model
 * must not see the difference. (Half the operations: every slice is a
 * transaction of its own, so these runs are slow on a busy machine.)
 */
const SLICED_OPERATIONS = Math.ceil(OPERATIONS / 2);

describe('when every change is applied in slices of two ids', () => {
  it.each(seeds)(
    'should catch up from the outbox and equal the serial model (seed %i)',
    async (seed) => {
      const { token, languageId, accountId } = await setUp(seed + 100_000);
      await env.worker?.close();
      await secondWorker?.close();
      secondWorker = undefined;
      const operations = generate(rng(seed + 100_000), SLICED_OPERATIONS, undefined, { v2Surface: true });
      const sent: Sent[] = [];
      for (const [index, operation] of operations.entries()) sent.push(await send(env, token, languageId, operation, `p${seed}-${index}`));
      const worker = await startWorker({ ...env.config, APPLIER_SLICE_SIZE: 2 });
      try {
        await check(seed + 100_000, languageId, accountId, sent, { order: 'sent', counts: true, drainMs: 90_000 });
      } finally {
        await worker.close();
      }
    },
    120_000,
  );

  it.each(seeds)(
    'should equal the serial model while requests keep coming (seed %i)',
    async (seed) => {
      const { token, languageId, accountId } = await setUp(seed + 110_000);
      const worker = await startWorker({ ...env.config, APPLIER_SLICE_SIZE: 2 });
      try {
        const operations = generate(rng(seed + 110_000), SLICED_OPERATIONS, undefined, { v2Surface: true });
        const sent: Sent[] = [];
        for (let start = 0; start < operations.length; start += 6) {
          const chunk = operations.slice(start, start + 6);
          sent.push(
            ...(await Promise.all(chunk.map((operation, offset) => send(env, token, languageId, operation, `q${seed}-${start + offset}`)))),
          );
        }
        await check(seed + 110_000, languageId, accountId, sent, { counts: true, drainMs: 90_000 });
      } finally {
        await worker.close();
      }
    },
    120_000,
  );
});
