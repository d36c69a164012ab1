import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyBulkBatch } from '../bulk/bulk-batch.service.js';
import { drainLanguage } from '../sync/drain.js';
import { InTurnWriter } from '../sync/in-turn.applier.js';
import { drainWithWorker, startEnvironment, type TestEnvironment } from './support/harness.js';
import { holdWriter } from './support/held-writer.js';
import { captureLogs } from './support/log-capture.js';
import { auditOf, langKeyOf, linksOf, liveIds, liveRecord } from './support/state.js';

/*
 * A bulk batch whose changes are the language's next to apply has their
 * effects applied in its own transaction (sync/in-turn.applier.ts); one that
 * is not, because another writer of the language is in flight or an earlier
 * change is pending, queues them for the applier. Either way the file ends in
 * the same state with the same audit entries, in the same order.
 */

const NDJSON = { 'content-type': 'application/x-ndjson' };
const BATCH = 1_000;

let env: TestEnvironment;
let token: string;

/** Stubs, links, references, records written after they were stubbed, lists that replace links, references moved, and repeated ids. */
const FILE = [
  ...Array.from({ length: 1_200 }, (_, i) =>
    JSON.stringify({ product: { id: `P${i}`, name: `Product ${i}`, category_ids: [`C${i % 7}`, 'C-all'] } }),
  ),
  ...Array.from({ length: 7 }, (_, i) => JSON.stringify({ category: { id: `C${i}`, name: `Category ${i}` } })),
  ...Array.from({ length: 300 }, (_, i) => JSON.stringify({ variant: { id: `V${i}`, product_id: `P${i}`, title: `Variant ${i}` } })),
  ...Array.from({ length: 600 }, (_, i) =>
    JSON.stringify({ product: { id: `P${i}`, name: `Product ${i} again`, category_ids: [`C${(i + 1) % 7}`] } }),
  ),
  ...Array.from({ length: 200 }, (_, i) =>
    JSON.stringify({ variant: { id: `V${i}`, product_id: `P${i + 1}`, title: `Variant ${i} moved` } }),
  ),
  JSON.stringify({ category: { id: 'C-all', name: 'Everything' } }),
];

const syncStatus = async () =>
  (await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders })).body as { pending: number };

const getJob = async (languageId: string, id: string) => {
  const response = await env.request('GET', `/api/v1/languages/${languageId}/bulk/${id}`, { token });
  expect(response.status, response.text).toBe(200);
  return response.body.bulk_job as { status: string; lines_stored: number; lines_applied: number; saved: number; failed: number };
};

async function upload(languageId: string): Promise<string> {
  const response = await env.request('POST', `/api/v1/languages/${languageId}/bulk`, { token, raw: FILE.join('\n'), headers: NDJSON });
  expect(response.status, response.text).toBe(202);
  return response.body.bulk_job.id as string;
}

/** What a language ended with: records, links and audit entries in order, without what differs between two uploads (numbers, request ids). */
async function outcome(languageId: string) {
  const records: Record<string, unknown> = {};
  for (const kind of ['product', 'category', 'variant'] as const) {
    for (const id of await liveIds(env, languageId, kind)) {
      const row = await liveRecord(env, languageId, kind, id);
      records[`${kind}/${id}`] = row?.data;
    }
  }
  const audit = (await auditOf(env, languageId))
    .filter((entry) => entry.kind !== 'language')
    .map(({ kind, record_id, action, actor, changes }) => ({
      kind,
      record_id,
      action,
      actor,
      changes,
    }));
  return { records, links: await linksOf(env, languageId, 'product_category'), audit };
}

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  token = await env.token();
  for (const id of ['nl', 'de']) {
    const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: id } } });
    expect(response.status).toBe(200);
  }
  // The languages' own creations are applied, so nothing of either is pending before its file.
  await drainWithWorker(env);
});

afterAll(async () => {
  await env?.close();
});

describe("when a bulk file is its language's only writer", () => {
  it("should apply each batch's effects with its lines, with no applier running", async () => {
    const jobId = await upload('nl');
    for (let batch = 1; batch <= 3; batch += 1) {
      await applyBulkBatch(env.db, jobId, { batchSize: BATCH });
      const stored = Math.min(batch * BATCH, FILE.length);
      expect(await getJob('nl', jobId)).toMatchObject({ lines_stored: stored, lines_applied: stored });
      // Only the lines not stored yet are pending: each batch applied its own.
      expect((await syncStatus()).pending).toBe(FILE.length - stored);
    }
    // The batch that stored the last line ended the job.
    expect(await getJob('nl', jobId)).toMatchObject({ status: 'completed', lines_applied: FILE.length, saved: FILE.length, failed: 0 });
    // The effects are there: stubs, links replaced by the later lines, a variant moved, and an audit entry for each.
    expect(await liveRecord(env, 'nl', 'category', 'C-all')).toMatchObject({ data: { name: 'Everything' } });
    const everything = await env.request('GET', '/api/v2/languages/nl/categories/C-all/products?per_page=1', { token });
    expect(everything.body.meta.total).toBe(600);
    const audit = await auditOf(env, 'nl');
    expect(audit.filter((entry) => entry.action === 'stub')).toHaveLength(8);
    expect(audit.filter((entry) => entry.action === 'unlink')).toHaveLength(1_200);
  });
});

describe('when another writer of the language is in flight', () => {
  it('should queue the batches behind it and end, once applied, as the file applied in turn', async () => {
    const langKey = await langKeyOf(env, 'de');
    // A single write that has taken its number and not committed yet.
    const writer = await holdWriter(env.db, langKey);
    const jobId = await upload('de');
    for (let batch = 1; batch <= 3; batch += 1) await applyBulkBatch(env.db, jobId, { batchSize: BATCH });
    expect(await getJob('de', jobId)).toMatchObject({ status: 'completed', lines_stored: FILE.length, lines_applied: 0 });
    expect((await syncStatus()).pending).toBe(FILE.length);
    await writer.release();

    await drainWithWorker(env);
    expect(await getJob('de', jobId)).toMatchObject({ lines_applied: FILE.length });
    expect(await outcome('de')).toEqual(await outcome('nl'));
    // The worker applies the whole file one change at a time here: past the default timeout on a loaded machine.
  }, 120_000);
});

describe('when the language is deleted while its file is under way', () => {
  it('should end the job failed, saying so, after the batches applied before', async () => {
    const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'fr', name: 'fr', code: 'fr' } } });
    expect(response.status).toBe(200);
    await drainWithWorker(env);
    const jobId = await upload('fr');
    await applyBulkBatch(env.db, jobId, { batchSize: BATCH });
    expect(await getJob('fr', jobId)).toMatchObject({ status: 'running', lines_stored: BATCH, lines_applied: BATCH });
    expect((await env.request('DELETE', '/api/v1/languages/fr', { token })).status).toBe(200);

    await applyBulkBatch(env.db, jobId, { batchSize: BATCH });
    const job = await env.db.one(sql.unsafe`SELECT status, error, saved FROM bulk_jobs WHERE id = ${jobId}`);
    expect(job).toEqual({ status: 'failed', error: "Language 'fr' was deleted", saved: BATCH });
  });
});

describe("when Postgres refuses a batch's links", () => {
  it("should queue the run, reporting the links' error rather than the aborted transaction's", async () => {
    const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'it', name: 'it', code: 'it' } } });
    expect(response.status).toBe(200);
    await drainWithWorker(env);
    // A real failure in the links' statement: the audit entries' statement, built meanwhile, is queued behind it.
    await env.db.query(sql.unsafe`
      CREATE FUNCTION refuse_link() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'link to % refused', NEW.b; END $$
    `);
    await env.db.query(sql.unsafe`
      CREATE TRIGGER refuse_link BEFORE INSERT ON links FOR EACH ROW WHEN (NEW.b = 'C-refused') EXECUTE FUNCTION refuse_link()
    `);
    try {
      const file = [
        JSON.stringify({ product: { id: 'R1', name: 'One', category_ids: ['C1'] } }),
        JSON.stringify({ product: { id: 'R2', name: 'Two', category_ids: ['C-refused'] } }),
        JSON.stringify({ product: { id: 'R3', name: 'Three', category_ids: ['C2'] } }),
      ];
      const uploaded = await env.request('POST', '/api/v1/languages/it/bulk', { token, raw: file.join('\n'), headers: NDJSON });
      expect(uploaded.status, uploaded.text).toBe(202);
      const jobId = uploaded.body.bulk_job.id as string;
      const { logger, lines } = captureLogs();
      await applyBulkBatch(env.db, jobId, { batchSize: BATCH, logger });

      const queued = lines.filter((line) => line['msg'] === 'a run could not be applied in turn; queueing it');
      expect(queued).toHaveLength(1);
      expect(queued[0]!['err']).toBe('link to C-refused refused');
      // The lines are stored, their effects left to the applier: nothing of the failed run was kept.
      expect(await getJob('it', jobId)).toMatchObject({ status: 'completed', saved: 3, lines_applied: 0 });
      expect((await syncStatus()).pending).toBe(3);
      expect(await linksOf(env, 'it', 'product_category')).toEqual([]);
    } finally {
      await env.db.query(sql.unsafe`DROP TRIGGER refuse_link ON links`);
      await env.db.query(sql.unsafe`DROP FUNCTION refuse_link()`);
    }
    // Once Postgres takes the links again, the applier applies all three, as records it creates: the failed run's
    // serial view, written with its records, went with them.
    await drainWithWorker(env);
    expect((await syncStatus()).pending).toBe(0);
    expect(await linksOf(env, 'it', 'product_category')).toHaveLength(3);
    const audit = await auditOf(env, 'it');
    expect(audit.filter((entry) => entry.kind === 'product').map(({ record_id, action }) => [record_id, action])).toEqual([
      ['R1', 'create'],
      ['R1', 'link'],
      ['R2', 'create'],
      ['R2', 'link'],
      ['R3', 'create'],
      ['R3', 'link'],
    ]);
  });
});

/** A new, drained language to write runs to in turn, and the origin of those writes. */
async function newLanguage(id: string, requestId: string) {
  const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: id } } });
  expect(response.status).toBe(200);
  await drainWithWorker(env);
  const langKey = await langKeyOf(env, id);
  const accountId = await env.db.oneFirst(sql.type(z.object({ account_id: z.number() }))`
    SELECT account_id FROM languages WHERE lang_key = ${langKey}
  `);
  return { langKey, origin: { accountId, languageId: id, actor: 'bulk-test', requestId } };
}

/** A record write as a bulk line makes it: the payload sent, its fields without the id. */
function write(kind: 'product' | 'variant', payload: Record<string, unknown>) {
  const { id, ...fields } = payload;
  return { kind, id: id as string, fields, times: {}, payload };
}

describe('when a run in turn creates its records', () => {
  it('should write each of them once, with its serial view, and audit their creation', async () => {
    const { langKey, origin } = await newLanguage('pt', 'in-turn-created');
    const statements = await env.db.transaction(async (tx) => {
      // This connection's work on the records table: its counts may include earlier transactions not reported yet, so
      // what this one did is the difference.
      const counts = () =>
        tx.one(sql.type(z.object({ inserted: z.number(), updated: z.number() }))`
          SELECT n_tup_ins AS inserted, n_tup_upd AS updated FROM pg_stat_xact_user_tables WHERE relname = 'records'
        `);
      const since = async (from: { inserted: number; updated: number }) => {
        const now = await counts();
        return { inserted: now.inserted - from.inserted, updated: now.updated - from.updated };
      };
      const start = await counts();
      const writer = await InTurnWriter.open(tx, langKey);
      expect(
        await writer.writeRun([write('product', { id: 'N1', name: 'One' }), write('product', { id: 'N2', name: 'Two' })], origin),
      ).toBe('applied');
      const variants = [write('variant', { id: 'W1', product_id: 'N1' }), write('variant', { id: 'W2', product_id: 'N2' })];
      expect(await writer.writeRun(variants, origin)).toBe('applied');
      const created = await since(start);
      // Sent again (a catalogue synced again): written, and already live with the reference they keep.
      const again = await counts();
      expect(
        await writer.writeRun(
          [write('product', { id: 'N1', name: 'One again' }), write('product', { id: 'N2', name: 'Two again' })],
          origin,
        ),
      ).toBe('applied');
      return { created, again: await since(again) };
    });
    // One row version each: the applier did not mark them written a second time.
    expect(statements.created).toEqual({ inserted: 4, updated: 0 });
    // Updated by their write only.
    expect(statements.again).toEqual({ inserted: 0, updated: 2 });
    const serialView = await env.db.any(sql.type(z.object({ id: z.string(), w_live: z.boolean(), w_ref: z.string().nullable() }))`
      SELECT id, w_live, w_ref FROM records WHERE lang_key = ${langKey} AND kind IN ('product', 'variant') ORDER BY id
    `);
    expect(serialView).toEqual([
      { id: 'N1', w_live: true, w_ref: null },
      { id: 'N2', w_live: true, w_ref: null },
      { id: 'W1', w_live: true, w_ref: 'N1' },
      { id: 'W2', w_live: true, w_ref: 'N2' },
    ]);
    const audit = await auditOf(env, 'pt');
    expect(audit.filter((entry) => entry.kind !== 'language').map(({ record_id, action }) => [record_id, action])).toEqual([
      ['N1', 'create'],
      ['N2', 'create'],
      ['W1', 'create'],
      ['W2', 'create'],
      ['N1', 'update'],
      ['N2', 'update'],
    ]);
    // The variants go with their product, as the drain's own cascade does for the serial view it wrote.
    expect((await env.request('DELETE', '/api/v1/languages/pt/products/N1', { token })).status).toBe(200);
    await drainWithWorker(env);
    expect(await liveIds(env, 'pt', 'variant')).toEqual(['W2']);
  });

  it('should not read the links of the records it creates, which have none, and replace those of records it updates', async () => {
    const { langKey, origin } = await newLanguage('pu', 'in-turn-links');
    const product = (id: string, categoryIds: string[]) => write('product', { id, name: id, category_ids: categoryIds });
    const reads = await env.db.transaction(async (tx) => {
      // Scans of the links table by this transaction, as a difference (the view may hold earlier transactions' counts).
      const scans = () =>
        tx.oneFirst(sql.type(z.object({ scans: z.number() }))`
          SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) AS scans FROM pg_stat_xact_user_tables WHERE relname = 'links'
        `);
      const writer = await InTurnWriter.open(tx, langKey);
      const start = await scans();
      expect(await writer.writeRun([product('L1', ['C1']), product('L2', ['C1', 'C2'])], origin)).toBe('applied');
      const created = (await scans()) - start;
      const again = await scans();
      expect(await writer.writeRun([product('L1', ['C2']), product('L2', ['C2'])], origin)).toBe('applied');
      return { created, updated: (await scans()) - again };
    });
    expect(reads.created).toBe(0);
    expect(reads.updated).toBeGreaterThan(0);
    expect(await linksOf(env, 'pu', 'product_category')).toEqual([
      ['L1', 'C2'],
      ['L2', 'C2'],
    ]);
    const audit = await auditOf(env, 'pu');
    expect(
      audit.filter((entry) => entry.kind !== 'language').map(({ record_id, action, changes }) => [record_id, action, changes]),
    ).toEqual([
      ['L1', 'create', { name: 'L1', category_ids: ['C1'] }],
      ['C1', 'stub', {}],
      ['L1', 'link', { category_ids: 'C1' }],
      ['L2', 'create', { name: 'L2', category_ids: ['C1', 'C2'] }],
      ['C2', 'stub', {}],
      ['L2', 'link', { category_ids: 'C1' }],
      ['L2', 'link', { category_ids: 'C2' }],
      ['L1', 'update', { name: 'L1', category_ids: ['C2'] }],
      ['L1', 'unlink', { category_ids: 'C1' }],
      ['L1', 'link', { category_ids: 'C2' }],
      ['L2', 'update', { name: 'L2', category_ids: ['C2'] }],
      ['L2', 'unlink', { category_ids: 'C1' }],
    ]);
  });
});

describe('when a run in turn names records of its own kind', () => {
  it('should take a record an earlier write of the run brought back as existing, not stub it', async () => {
    // What a run names is looked up before the run is applied only when none is of the run's kind
    // (run.applier.ts, lookUpNamedAhead): here the lookup must come after R1 is written and marked.
    const { langKey, origin } = await newLanguage('pv', 'in-turn-own-kind');
    // R1 is a tombstone: a row outside the serial view until a write brings it back.
    expect(
      (await env.request('POST', '/api/v1/languages/pv/products', { token, body: { product: { id: 'R1', name: 'Old' } } })).status,
    ).toBe(200);
    expect((await env.request('DELETE', '/api/v1/languages/pv/products/R1', { token })).status).toBe(200);
    await drainWithWorker(env);
    const product = (id: string, fields: Record<string, unknown>) => write('product', { id, ...fields });
    await env.db.transaction(async (tx) => {
      const writer = await InTurnWriter.open(tx, langKey);
      const run = [
        product('R1', { name: 'One', category_ids: ['K1'] }),
        product('R2', { name: 'Two', relevant_product_ids: ['R1', 'R9'], category_ids: ['K1'] }),
      ];
      expect(await writer.writeRun(run, origin)).toBe('applied');
    });
    expect(await linksOf(env, 'pv', 'relevant')).toEqual([
      ['R2', 'R1'],
      ['R2', 'R9'],
    ]);
    const audit = await auditOf(env, 'pv');
    expect(
      audit
        .filter((entry) => entry.kind !== 'language' && entry.request_id === 'in-turn-own-kind')
        .map(({ record_id, action }) => [record_id, action]),
    ).toEqual([
      ['R1', 'create'],
      ['K1', 'stub'],
      ['R1', 'link'],
      ['R2', 'create'],
      ['R9', 'stub'],
      ['R2', 'link'],
      ['R2', 'link'],
      ['R2', 'link'],
    ]);
    expect(await liveIds(env, 'pv', 'product')).toEqual(['R1', 'R2', 'R9']);
  });
});

describe("when a line looks up a record that the file's queued changes stub or take with them", () => {
  it('should stop before the line until the applier has applied them, and then take it as sent one by one', async () => {
    const created = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'es', name: 'es', code: 'es' } } });
    expect(created.status).toBe(200);
    await drainWithWorker(env);
    const langKey = await langKeyOf(env, 'es');
    // A single write in flight: the file's changes cannot be the language's next, so they are queued.
    const writer = await holdWriter(env.db, langKey);
    const file = [
      // Stubs product P1; the delete that follows needs it live.
      JSON.stringify({ variant: { id: 'V1', product_id: 'P1', title: 'Variant' } }),
      JSON.stringify({ delete: { kind: 'product', id: 'P1' } }),
      // The product's delete takes the variant with it: this delete is 404.
      JSON.stringify({ delete: { kind: 'variant', id: 'V1' } }),
    ];
    const uploaded = await env.request('POST', '/api/v1/languages/es/bulk', { token, raw: file.join('\n'), headers: NDJSON });
    expect(uploaded.status, uploaded.text).toBe(202);
    const jobId = uploaded.body.bulk_job.id as string;

    const first = await applyBulkBatch(env.db, jobId, { batchSize: BATCH });
    expect(first).toMatchObject({ done: false, applied: 1, waitForRequest: expect.any(String) });
    expect(await getJob('es', jobId)).toMatchObject({ status: 'running', lines_stored: 1, lines_applied: 0 });
    await writer.release();
    // Until the applier has applied the stub, the file stays where it is.
    expect(await applyBulkBatch(env.db, jobId, { batchSize: BATCH })).toMatchObject({ done: false, applied: 0 });
    // The language's applier, without a worker (which would take the file on itself).
    const { logger } = captureLogs();
    await drainLanguage(env.db, langKey, logger);

    const second = await applyBulkBatch(env.db, jobId, { batchSize: BATCH });
    expect(second).toMatchObject({ done: false, applied: 1, waitForRequest: expect.any(String) });
    expect(await liveRecord(env, 'es', 'variant', 'V1')).not.toBeNull();
    await drainLanguage(env.db, langKey, logger);
    expect(await applyBulkBatch(env.db, jobId, { batchSize: BATCH })).toMatchObject({ done: true, applied: 1 });
    await drainLanguage(env.db, langKey, logger);

    const job = (await env.request('GET', `/api/v1/languages/es/bulk/${jobId}`, { token })).body.bulk_job;
    expect(job).toMatchObject({ status: 'completed', lines_applied: 3, saved: 2, failed: 1 });
    expect(job.errors).toEqual([{ line: 3, error: { error: 'Variant not found' } }]);
    expect(await liveRecord(env, 'es', 'product', 'P1')).toBeNull();
  });
});
