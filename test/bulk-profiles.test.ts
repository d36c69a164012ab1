import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForBulkJob } from './support/bulk-jobs.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { workerSample } from './support/metrics.js';
import { profileHeavyLines } from './support/profile-lines.js';
import { rng } from './support/scenario.js';
import { comparableState } from './support/state.js';
import { SEGMENT } from './support/v2-client.js';

/*
 * Consecutive profile lines of a bulk file are matched (the profile rule, interface §4.5: by id, then
 * by email, the oldest first) against one look at the language's profiles
 * and the lines before them, and stored as runs (docs/consistency.md,
 * "Profile lines in runs"). A file whose profiles keep matching each other
 * ends as its lines sent one by one would, in both interfaces.
 */

let env: TestEnvironment;
let token: string;
let account: string;

type Line = Record<string, any>;
type Generation = 'v1' | 'v2';
type Kind = keyof typeof SEGMENT;

/** The single request a line stands for: a delete, or a write (v1 POSTs, v2 PUTs). */
function requestOf(generation: Generation, language: string, line: Line): { method: string; path: string; body?: Line } {
  const collection = `/api/${generation}/languages/${language}`;
  if (line['delete']) return { method: 'DELETE', path: `${collection}/${SEGMENT[line['delete'].kind as Kind]}/${line['delete'].id}` };
  return { method: generation === 'v1' ? 'POST' : 'PUT', path: `${collection}/${SEGMENT[Object.keys(line)[0] as Kind]}`, body: line };
}

/** Sends the lines as their single requests, one by one; returns the `{line, error}` the job must report for them. */
async function sendOneByOne(generation: Generation, language: string, lines: Line[]) {
  const errors: Array<{ line: number; error: unknown }> = [];
  for (const [index, line] of lines.entries()) {
    const { method, path, body } = requestOf(generation, language, line);
    const response = await env.request(method, path, { token, body });
    if (response.status >= 500) throw new Error(`${JSON.stringify(line)} answered ${response.status}: ${response.text}`);
    if (response.status >= 300) errors.push({ line: index + 1, error: response.body });
  }
  return errors;
}

/** Uploads the lines as a file of `generation` and waits until it is stored and its effects applied; the job as v2 shows it. */
async function bulkOf(generation: Generation, language: string, lines: Line[]) {
  const upload = await env.request('POST', `/api/${generation}/languages/${language}/bulk`, {
    token,
    raw: lines.map((line) => JSON.stringify(line)).join('\n'),
    headers: { 'content-type': 'application/x-ndjson' },
  });
  expect(upload.status, upload.text).toBe(202);
  const location = `/api/v2/languages/${language}/bulk/${generation === 'v1' ? upload.body.bulk_job.id : upload.body.id}`;
  return waitForBulkJob(env, token, location, 180_000);
}

beforeAll(async () => {
  env = await startEnvironment();
  const client = await env.newClient();
  token = await env
    .request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    })
    .then((response) => response.body.access_token);
  account = client.account;
});
afterAll(() => env?.close());

describe.each([
  ['v1', 2_200],
  ['v2', 1_500],
] as const)('when a %s file is mostly profiles that match each other by id and by email', (generation, count) => {
  it('should match, refuse and store each line as its request would, in blocks', async () => {
    const r = rng(Number(process.env['BULK_SEED'] ?? 20261128));
    const prelude = profileHeavyLines(r, 40, generation);
    const lines = profileHeavyLines(r, count, generation);
    const [bulk, oneByOne] = [`${generation}-bulk`, `${generation}-one-by-one`];
    for (const language of [bulk, oneByOne]) {
      const created = await env.request('PUT', '/api/v2/languages', { token, body: { language: { id: language } } });
      expect(created.status).toBe(200);
      // What the file's first look finds: profiles written before it.
      await sendOneByOne(generation, language, prelude);
    }
    const lineByLine = () => workerSample(env.worker!.metricsPort, 'sync_bulk_batches_line_by_line_total');
    const lineByLineBefore = await lineByLine();

    const job = await bulkOf(generation, bulk, lines);
    // Every batch matched its profiles in blocks: none fell back to looking each line up alone.
    expect(await lineByLine()).toBe(lineByLineBefore);
    const errors = await sendOneByOne(generation, oneByOne, lines);
    expect(job.errors).toEqual(errors);
    expect(job).toMatchObject({ status: 'completed', saved: lines.length - errors.length, failed: errors.length });
    // The file exercises each way the profile rule (interface §4.5) refuses a line, and a refused field.
    const refusals = JSON.stringify(errors);
    expect(refusals).toContain('"missing_parameters":["id"]');
    expect(refusals).toContain('"missing_parameters":["email"]');
    expect(refusals).toContain('"invalid_parameters":["gender"]');

    await env.drain(120_000);
    const state = await comparableState(env, bulk, account);
    expect(state).toEqual(await comparableState(env, oneByOne, account));
    // Most lines wrote a profile (audited as created or updated).
    expect(state.audit.filter((fact) => fact.kind === 'profile').length).toBeGreaterThan(lines.length / 2);
  }, 360_000);
});
