import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../platform/json-nesting.js';
import { spawnReadyWorker } from './support/api-process.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { stopProcess } from './support/processes.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * What each line of a bulk file must be before it is parsed, in v1 and v2
 * files alike: nested at most MAX_JSON_DEPTH levels (a deeper line is that
 * line's error, found without the parse that would hold the worker, and
 * with it every account's effects) and valid UTF-8 (never decoded with
 * replacement characters, which would make two ids one). The rest of the
 * file is applied. The worker runs as a process of its own.
 */

let env: TestEnvironment;
let worker: ChildProcess;
let bulk: Shop;
let other: Shop;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  worker = (await spawnReadyWorker(env.config)).child;
  [bulk, other] = await Promise.all([openShop(env, 'nl'), openShop(env, 'nl')]);
}, 120_000);
afterAll(async () => {
  if (worker) await stopProcess(worker);
  await env?.close();
});

/** `[[[...]]]` nested 400,000 levels: about 800 KB, under the 1 MiB line limit. */
const DEEP = `${'['.repeat(400_000)}${']'.repeat(400_000)}`;
/** Lines nested that deep in a file: parsed, they held the worker for half a second or more each. */
const DEEP_LINES = 24;
const TOO_DEEP = { error: { message: `Line is nested too deeply: at most ${MAX_JSON_DEPTH} levels of arrays and objects` } };
const NOT_UTF8 = { error: { message: 'Line is not valid UTF-8' } };

/** A product line whose id holds `bytes` (read as Latin-1 here): the probe's `s\xc0\xaf` and `s\xff\xfe`. */
const productWithId = (bytes: string) =>
  Buffer.concat([Buffer.from('{"product":{"id":"s'), Buffer.from(bytes, 'latin1'), Buffer.from('","name":"S"}}')]);

interface FileCase {
  generation: 'v1' | 'v2';
  /** A line nested too deep, as this generation's lines go. */
  deep: (index: number) => string;
}

const CASES: FileCase[] = [
  { generation: 'v1', deep: (index) => `{"product":{"id":"deep${index}","name":${DEEP}}}` },
  {
    generation: 'v2',
    deep: (index) =>
      index % 2 === 0 ? `{"product":{"id":"deep${index}","name":${DEEP}}}` : `{"put":"orders/o1/products/p1","body":${DEEP}}`,
  },
];

describe.each(CASES)('when a $generation bulk file holds lines nested too deep and lines that are not UTF-8', ({ generation, deep }) => {
  const language = `${generation}-lines`;
  let job: Record<string, any>;
  let otherEffectMs: number;
  /** The line numbers of each kind of line, as written into the file. */
  const expected = { deep: [] as number[], notUtf8: [] as number[], good: [] as string[] };

  beforeAll(async () => {
    expect((await bulk.request('POST', '/api/v1/languages', { language: { id: language, name: 'L', code: 'xx' } })).status).toBe(200);
    const lines: Buffer[] = [];
    const add = (line: string | Buffer) => lines.push(Buffer.isBuffer(line) ? line : Buffer.from(line));
    for (let index = 0; index < DEEP_LINES; index += 1) {
      add(`{"product":{"id":"good${index}","name":"Good ${index}"}}`);
      expected.good.push(`good${index}`);
      add(deep(index));
      expected.deep.push(lines.length);
      if (index < 2) {
        add(productWithId(index === 0 ? '\xc0\xaf' : '\xff\xfe'));
        expected.notUtf8.push(lines.length);
      }
    }
    add('{"product":{"id":"last","name":"Last"}}');
    expected.good.push('last');
    const upload = await env.request('POST', `/api/${generation}/languages/${language}/bulk`, {
      token: bulk.token,
      raw: Buffer.concat(lines.flatMap((line) => [line, Buffer.from('\n')])),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    const location = upload.headers.get('location')!;

    // Meanwhile another account writes a product with a category: the worker links them (its effect).
    const started = Date.now();
    const id = `${generation}-meanwhile`;
    expect((await other.v1('product', { id, name: 'Meanwhile', category_ids: ['c1'] })).status).toBe(200);
    const effect = await pollUntil(
      () => other.get(`/products/${id}`),
      (read) => read.status === 200 && read.body.category_ids?.length === 1,
      { timeoutMs: 30_000, intervalMs: 25 },
    );
    expect(effect.body.category_ids).toEqual(['c1']);
    otherEffectMs = Date.now() - started;

    const read = async () => {
      const response = await env.request('GET', location, { token: bulk.token });
      return generation === 'v1' ? response.body.bulk_job : response.body;
    };
    job = await pollUntil(read, (value) => ['completed', 'failed'].includes(value?.status), { timeoutMs: 180_000, intervalMs: 100 });
  }, 240_000);

  it("should apply another account's write promptly while the file is applied", () => {
    // Generous for a loaded machine: these lines, parsed, used to hold the worker for tens of seconds.
    expect(otherEffectMs).toBeLessThan(10_000);
  });

  it('should report each such line as its error and apply the rest of the file', () => {
    expect(job.status).toBe('completed');
    const errors = new Map<number, unknown>(job.errors.map((item: { line: number; error: unknown }) => [item.line, item.error]));
    for (const line of expected.deep) expect(errors.get(line), `line ${line}`).toEqual(TOO_DEEP);
    for (const line of expected.notUtf8) expect(errors.get(line), `line ${line}`).toEqual(NOT_UTF8);
    expect(job.failed).toBe(expected.deep.length + expected.notUtf8.length);
    expect(job.saved).toBe(expected.good.length);
  });

  it('should store the good lines, and neither of the two ids that are not UTF-8 as one record', async () => {
    const products = await bulk.request('GET', `/api/v2/languages/${language}/products?per_page=250`);
    const ids = (products.body.data as Array<{ id: string }>).map((item) => item.id).sort();
    expect(ids).toEqual([...expected.good].sort());
    const replaced = await bulk.request('GET', `/api/v2/languages/${language}/products/${encodeURIComponent('s\ufffd\ufffd')}`);
    expect(replaced.status).toBe(404);
  });
});
