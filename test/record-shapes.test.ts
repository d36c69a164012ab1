import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { KINDS, RECORD_KINDS, STORED_KINDS } from '../catalogue/record-kinds.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';

/*
 * Every body and every bulk line that is not a valid record
 * is a client error (a 400 body; in bulk, that line's error), never a 500 and
 * never a bulk job that cannot go on.
 */

let env: TestEnvironment;
let token: string;

beforeAll(async () => {
  env = await startEnvironment();
  token = await env.token();
  const created = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'NL', code: 'nl' } } });
  expect(created.status).toBe(200);
  // An order, so that a line write reaches the validation of its body.
  const order = await env.request('POST', '/api/v1/languages/nl/orders', {
    token,
    body: { order: { id: 'O1', profile_id: 'u1', products: [{ id: 'P1', quantity: 1 }] } },
  });
  expect(order.status).toBe(200);
});
afterAll(() => env.close());

/** Values that are not a record, as a whole body and as the value of the body's one key. */
const NOT_RECORDS: unknown[] = [null, [], [{}], 'text', 0, 1.5, true, false];
/** Records whose id is no id. */
const BAD_IDS: unknown[] = [null, {}, [], true, '', 1.5];

const body = (raw: unknown) => JSON.stringify(raw);

/** [route, body] pairs: every write route of the API with bodies that are not valid records. */
function badWrites(): Array<[string, string, string]> {
  const cases: Array<[string, string, string]> = [];
  const routes: Array<{ method: string; path: string; key: string }> = [
    { method: 'POST', path: '/api/v1/languages', key: 'language' },
    { method: 'PUT', path: '/api/v2/languages', key: 'language' },
    ...RECORD_KINDS.map((kind) => ({ method: 'POST', path: `/api/v1/languages/nl/${KINDS[kind].segment}`, key: kind })),
    ...STORED_KINDS.map((kind) => ({ method: 'PUT', path: `/api/v2/languages/nl/${KINDS[kind].segment}`, key: kind })),
  ];
  for (const { method, path, key } of routes) {
    for (const value of NOT_RECORDS) {
      cases.push([method, path, body(value)]);
      cases.push([method, path, body({ [key]: value })]);
    }
    for (const id of BAD_IDS) cases.push([method, path, body({ [key]: { id } })]);
    cases.push([method, path, body({ [key]: { id: 'x', email: [] } })]);
    cases.push([method, path, body({ [key]: { id: 'x', email: null } })]);
  }
  for (const value of NOT_RECORDS) {
    cases.push(['PUT', '/api/v2/custom_attributes', body(value)]);
    // A line's body is optional (interface §15): JSON null is taken as no body.
    if (value !== null) cases.push(['PUT', '/api/v2/languages/nl/orders/O1/products/P1', body(value)]);
  }
  return cases;
}

describe('when a write body is not a valid record', () => {
  it.each(badWrites())('should answer %s %s with %s as a 400 body', async (method, path, raw) => {
    const response = await env.request(method, path, { token, raw, headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expect(response.body).toHaveProperty('error');
  });
});

const NDJSON = { 'content-type': 'application/x-ndjson' };

async function upload(lines: string[]) {
  const response = await env.request('POST', '/api/v1/languages/nl/bulk', { token, raw: lines.join('\n'), headers: NDJSON });
  expect(response.status).toBe(202);
  const location = response.headers.get('location')!;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const job = await env.request('GET', location, { token });
    if (['completed', 'failed'].includes(job.body.bulk_job.status)) return job.body.bulk_job;
    if (Date.now() > deadline) throw new Error(`bulk job did not finish: ${job.text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

type Fragment = ReturnType<typeof sql.fragment>;

/**
 * Runs `run` while inserting into `table` (the rows `when` selects) runs the
 * plpgsql `body` first: a fault of the test's own database. Fragments, not
 * values: DDL takes no parameters.
 */
async function withInsertFault(table: 'records' | 'bulk_marks', when: Fragment, body: Fragment, run: () => Promise<void>) {
  const target = sql.identifier([table]);
  await env.db.query(sql.unsafe`CREATE FUNCTION test_fault() RETURNS trigger LANGUAGE plpgsql AS $$ ${body} $$`);
  await env.db.query(sql.unsafe`
    CREATE TRIGGER test_fault BEFORE INSERT ON ${target} FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION test_fault()
  `);
  try {
    await run();
  } finally {
    await env.db.query(sql.unsafe`DROP TRIGGER test_fault ON ${target}`);
    await env.db.query(sql.unsafe`DROP FUNCTION test_fault()`);
  }
}

async function liveProducts(ids: string[]) {
  return env.db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT r.id FROM records r JOIN languages l ON l.lang_key = r.lang_key
    WHERE l.id = 'nl' AND l.deleted_at IS NULL AND r.kind = 'product' AND r.live AND r.id = ANY(${sql.array(ids, 'text')})
    ORDER BY r.id
  `);
}

describe('when a bulk file holds a null record between two good lines', () => {
  it('should complete with 2 saved and 1 failed, and both products stored', async () => {
    const job = await upload(['{"product":{"id":"before","name":"x"}}', '{"profile":null}', '{"product":{"id":"after","name":"y"}}']);
    expect(job).toMatchObject({ status: 'completed', lines: 3, saved: 2, failed: 1 });
    expect(job.errors).toEqual([{ line: 2, error: { error: { message: expect.any(String), invalid_parameters: ['profile'] } } }]);
    expect(await liveProducts(['after', 'before'])).toEqual(['after', 'before']);
  });
});

describe('when every line of a bulk file is a shape that is not a valid record', () => {
  it('should report each line as its own 400 error and store the good line after them', async () => {
    const shapes: string[] = [];
    for (const kind of RECORD_KINDS) {
      for (const value of NOT_RECORDS) shapes.push(body({ [kind]: value }));
      for (const id of BAD_IDS) shapes.push(body({ [kind]: { id } }));
    }
    for (const value of NOT_RECORDS) shapes.push(body(value), body({ delete: value }));
    shapes.push(
      body({ delete: { kind: 'product' } }),
      body({ delete: { kind: 'language', id: 'x' } }),
      body({ delete: { kind: null, id: null } }),
      body({ delete: { kind: 'product', id: 'x' }, product: { id: 'x', name: 'y' } }),
      body({ profile: { id: 'p', email: [] } }),
      body({ profile: { id: {}, email: 'a@example.test' } }),
      '[1,2',
      '"just a string"',
      `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
      body({ product: { id: 'deep', name: 'd', category_ids: JSON.parse(`${'['.repeat(2_000)}${']'.repeat(2_000)}`) } }),
    );
    const job = await upload([...shapes, '{"product":{"id":"good","name":"g"}}']);
    expect(job).toMatchObject({ status: 'completed', lines: shapes.length + 1, saved: 1, failed: shapes.length });
    const all = await env.request('GET', `/api/v1/languages/nl/bulk/${job.id}/errors`, { token });
    const errors = all.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { line: number; error: unknown });
    expect(errors.map((item) => item.line)).toEqual(shapes.map((_shape, index) => index + 1));
    for (const item of errors) expect(item.error).toHaveProperty('error');
    expect(await liveProducts(['good'])).toEqual(['good']);
  });
});

describe('when Postgres refuses one line of a bulk file for a reason no validation knows', () => {
  it('should report that line with the generic error and store the lines around it', async () => {
    // Inserting the record 'explode' fails.
    await withInsertFault(
      'records',
      sql.fragment`NEW.id = 'explode'`,
      sql.fragment`BEGIN RAISE EXCEPTION 'refused by the test'; END`,
      async () => {
        const job = await upload([
          '{"product":{"id":"around-1","name":"a"}}',
          '{"product":{"id":"explode","name":"b"}}',
          '{"product":{"id":"around-2","name":"c"}}',
        ]);
        expect(job).toMatchObject({ status: 'completed', lines: 3, saved: 2, failed: 1 });
        expect(job.errors).toEqual([{ line: 2, error: { error: 'The request cannot be processed at this moment' } }]);
        expect(await liveProducts(['around-1', 'around-2', 'explode'])).toEqual(['around-1', 'around-2']);
      },
    );
  });
});

describe('when a line taken alone meets a deadlock and slonik takes its savepoint again', () => {
  it('should count the line once', async () => {
    // The record 'twice' is refused for a reason no line explains (the batch goes line by line), then once with
    // deadlock_detected, which slonik answers by running the savepoint's handler again.
    await env.db.query(sql.unsafe`CREATE SEQUENCE test_twice_calls`);
    try {
      await withInsertFault(
        'records',
        sql.fragment`NEW.id = 'twice'`,
        sql.fragment`
          BEGIN
            CASE nextval('test_twice_calls')
              WHEN 1 THEN RAISE EXCEPTION 'refused by the test';
              WHEN 2 THEN RAISE EXCEPTION 'deadlock made by the test' USING ERRCODE = 'deadlock_detected';
              ELSE RETURN NEW;
            END CASE;
          END`,
        async () => {
          const job = await upload([
            '{"product":{"id":"before-twice","name":"a"}}',
            '{"product":{"id":"twice","name":"b"}}',
            '{"product":{"id":"after-twice","name":"c"}}',
          ]);
          expect(job).toMatchObject({ status: 'completed', lines: 3, saved: 3, failed: 0, errors: [] });
          expect(await liveProducts(['after-twice', 'before-twice', 'twice'])).toEqual(['after-twice', 'before-twice', 'twice']);
          // Written once: one change, so one audit entry, as the line sent alone would make.
          await env.drain();
          const audits = await env.db.anyFirst(sql.type(z.object({ action: z.string() }))`
            SELECT action FROM audit_log WHERE kind = 'product' AND record_id = 'twice'
          `);
          expect(audits).toEqual(['create']);
        },
      );
    } finally {
      await env.db.query(sql.unsafe`DROP SEQUENCE test_twice_calls`);
    }
  });
});

describe('when a bulk file cannot go on whatever its lines say', () => {
  it('should end the job failed with a reason after a few attempts, keeping what was applied', async () => {
    // Every batch fails where it records its progress: no line is to blame.
    await withInsertFault(
      'bulk_marks',
      sql.fragment`TRUE`,
      sql.fragment`BEGIN RAISE EXCEPTION 'progress refused by the test'; END`,
      async () => {
        const job = await upload(['{"product":{"id":"stuck-1","name":"a"}}', '{"product":{"id":"stuck-2","name":"b"}}']);
        expect(job).toMatchObject({ status: 'failed', saved: 0, failed: 0 });
        expect(job.error).toMatch(/could not apply the lines after line 0 \(5 attempts\)/);
        expect(job.error).not.toMatch(/progress refused|bulk_marks|INSERT/);
        expect(await liveProducts(['stuck-1', 'stuck-2'])).toEqual([]);
        // Work really not done: counted in sync-status (sync/status.repository.ts).
        const status = await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
        expect(status.body).toEqual({ pending: 0, failed: 1 });
      },
    );
  });
});
