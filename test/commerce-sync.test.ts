import { execFile, execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS } from './support/browser.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { type CheckingProxy, startCheckingProxy } from './support/openapi-check.js';
import { freePort } from './support/processes.js';

/*
 * The shop's command line, run as a shop runs it (bin/commerce-sync.mjs, a
 * process of its own) against the real API and worker, over HTTP only,
 * through a proxy that checks every response it receives against
 * /openapi.json, as the harness's requests are.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin/commerce-sync.mjs');
const CLI_TIMEOUT = 120_000;

let env: TestEnvironment;
let proxy: CheckingProxy;
let directory: string;
let credentials: Record<string, string>;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function commerceSync(args: string[], extraEnv: Record<string, string> = credentials): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', HOME: os.tmpdir(), ...extraEnv }, timeout: CLI_TIMEOUT },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

async function createLanguage(id: string, token: string) {
  const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: 'nl' } } });
  expect(response.status).toBe(200);
}

const file = async (name: string, lines: string[] | Buffer) => {
  const target = path.join(directory, name);
  await writeFile(target, Array.isArray(lines) ? `${lines.join('\n')}\n` : lines);
  return target;
};

const pad = (index: number) => String(index).padStart(4, '0');
const at = (index: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, index)).toISOString();

/**
 * A whole catalogue in the order a shop might send it: brands naming their
 * products first, child categories before their parents, reviews before their
 * profiles, some deletes. Ids and timestamps ascend together, as a shop's own
 * export would give them.
 */
function catalogue(products: number): string[] {
  const lines: string[] = [];
  for (let b = 0; b < 5; b += 1) {
    const ids = Array.from({ length: products / 5 }, (_, i) => `P${pad(i * 5 + b)}`);
    lines.push(JSON.stringify({ brand: { id: `B${b}`, name: `Brand ${b}`, product_ids: ids, created_at: at(b), updated_at: at(b) } }));
  }
  for (let c = 9; c >= 0; c -= 1)
    lines.push(
      JSON.stringify({
        category: { id: `C${c}`, name: `Category ${c}`, parent_category_id: c > 0 ? `C${c - 1}` : null, created_at: at(10 + c) },
      }),
    );
  for (let p = 0; p < products; p += 1) {
    lines.push(
      JSON.stringify({
        product: {
          id: `P${pad(p)}`,
          name: `Product ${p}`,
          price: p + 0.5,
          visible: p % 2 === 0,
          category_ids: [`C${p % 10}`, `C${(p + 3) % 10}`],
          relevant_product_ids: p > 0 ? [`P${pad(p - 1)}`] : [],
          created_at: at(100 + p),
          updated_at: at(100 + p),
        },
      }),
    );
  }
  for (let v = 0; v < 50; v += 1)
    lines.push(
      JSON.stringify({
        variant: { id: `V${pad(v)}`, product_id: `P${pad(v)}`, title: `Size ${v}`, price_incl: 9.99, created_at: at(2_000 + v) },
      }),
    );
  for (let r = 0; r < 20; r += 1)
    lines.push(
      JSON.stringify({
        review: { id: `R${pad(r)}`, product_id: `P${pad(r)}`, profile_id: `u${pad(r)}`, score: 4, created_at: at(3_000 + r) },
      }),
    );
  for (let u = 0; u < 20; u += 1)
    lines.push(JSON.stringify({ profile: { id: `u${pad(u)}`, email: `u${u}@example.test`, first_name: `User ${u}`, tags: ['vip'] } }));
  for (let o = 0; o < 20; o += 1)
    lines.push(
      JSON.stringify({
        order: {
          id: `O${pad(o)}`,
          profile_id: `u${pad(o)}`,
          products: [{ id: `P${pad(o)}`, quantity: 2 }],
          status: 'shipped',
          created_at: at(4_000 + o),
        },
      }),
    );
  lines.push(JSON.stringify({ shopping_cart: { id: 'S1', profile_id: 'u0001', product_ids: ['P0001', 'P0002'], created_at: at(5_000) } }));
  lines.push('{"delete":{"kind":"variant","id":"V0049"}}');
  return lines;
}

beforeAll(async () => {
  env = await startEnvironment();
  proxy = await startCheckingProxy(env.baseUrl);
  const client = await env.newClient();
  credentials = { SYNC_URL: proxy.url, SYNC_CLIENT_ID: client.client_id, SYNC_CLIENT_SECRET: client.client_secret };
  const token = (
    await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    })
  ).body.access_token as string;
  for (const language of ['nl', 'copy', 'errors', 'zipped', 'tty', 'v2', 'v2-source', 'v2-copy', 'empty', 'one'])
    await createLanguage(language, token);
  directory = await mkdtemp(path.join(os.tmpdir(), 'commerce-sync-'));
});

afterEach(() => {
  expect(proxy.take(), 'responses the command line received that /openapi.json does not describe').toEqual([]);
});

afterAll(async () => {
  await proxy?.close();
  await env?.close();
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe('when a shop pushes a file and exports it back', { timeout: 4 * CLI_TIMEOUT }, () => {
  let exported: string;

  it('should upload the file, follow the job with plain progress lines and exit 0 once every line is applied', async () => {
    const lines = catalogue(600);
    const run = await commerceSync(['push', await file('catalogue.ndjson', lines), '--language', 'nl']);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toMatch(
      new RegExp(`catalogue\\.ndjson -> nl: job [0-9a-f-]{36} completed: ${lines.length} lines, ${lines.length} saved, 0 failed, in \\d+s`),
    );
    // Without a terminal: timestamped lines, the last one with everything applied.
    const progress = run.stderr.trim().split('\n');
    expect(progress.at(-1)).toMatch(
      new RegExp(`^\\[ *[\\d.]+s\\] completed: ${lines.length}/${lines.length} lines applied, ${lines.length} stored, `),
    );
    // The summary repeats the time and rate of the last progress line.
    const [, elapsed, rate] = progress.at(-1)!.match(/^\[ *([\d.]+)s\] .*, ([\d,]+) lines\/s, /)!;
    expect(run.stdout).toContain(`in ${Math.ceil(Number(elapsed))}s (${rate} lines/s)`);
    // No terminal escapes (cursor moves, colours) in a log.
    expect(run.stderr).not.toContain('\u001b[');
    // Effects are there when it returns: the links of the last product.
    const category = await env.request('GET', '/api/v2/languages/nl/categories/C9/products?per_page=250', {
      token: await tokenOf(credentials),
    });
    expect(category.body.meta.total).toBe(120);
  });

  it('should export every kind as lines push reads, paging through more than one page', async () => {
    const target = path.join(directory, 'export-nl.ndjson');
    const run = await commerceSync(['export', '--language', 'nl', '--output', target]);
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: '' });
    exported = await readFile(target, 'utf8');
    const kinds = exported
      .trim()
      .split('\n')
      .map((line) => Object.keys(JSON.parse(line))[0]);
    const count = (kind: string) => kinds.filter((each) => each === kind).length;
    expect({
      brand: count('brand'),
      category: count('category'),
      product: count('product'),
      variant: count('variant'),
      review: count('review'),
      profile: count('profile'),
      order: count('order'),
      shopping_cart: count('shopping_cart'),
    }).toEqual({ brand: 5, category: 10, product: 600, variant: 49, review: 20, profile: 20, order: 20, shopping_cart: 1 });
    expect(run.stderr).toContain('product: 600 lines');
    // Without a terminal only the summary of each kind: no progress line, no carriage returns.
    for (const line of run.stderr.trim().split('\n')) expect(line).toMatch(/^(\w+: [\d,]+ lines?(;.*)?| {2}.*)$/);
    expect(run.stderr).not.toMatch(/\r|records\/s/);
    // Kinds come in the order push needs, categories parents first.
    expect(exported.indexOf('"category":{"id":"C0"')).toBeLessThan(exported.indexOf('"category":{"id":"C9"'));
    expect(exported.indexOf('{"category"')).toBeLessThan(exported.indexOf('{"product"'));
    expect(exported.indexOf('{"product"')).toBeLessThan(exported.indexOf('{"brand"'));
  });

  it('should give the same catalogue when the export is pushed into an empty language (a round trip)', async () => {
    const pushed = await commerceSync(['push', await file('round-trip.ndjson', exported.trim().split('\n')), '--language', 'copy']);
    expect(pushed, pushed.stderr).toMatchObject({ code: 0 });
    const again = await commerceSync(['export', '--language', 'copy']);
    expect(again, again.stderr).toMatchObject({ code: 0 });
    expect(again.stdout).toBe(exported);
    // And the same as the service shows it, brand and links included.
    const token = await tokenOf(credentials);
    for (const record of ['products/P0003', 'categories/C4', 'brands/B3', 'orders/O0005', 'profiles/u0007']) {
      const original = await env.request('GET', `/api/v2/languages/nl/${record}`, { token });
      const copy = await env.request('GET', `/api/v2/languages/copy/${record}`, { token });
      expect(copy.body, record).toEqual(original.body);
    }
  });

  it('should export only the kinds asked for, to stdout', async () => {
    const run = await commerceSync(['export', '-l', 'nl', '--kind', 'brand,category']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(15);
    expect(run.stdout).not.toContain('"product"');
  });
});

describe('when lines of a pushed file fail', { timeout: 2 * CLI_TIMEOUT }, () => {
  const broken = Array.from({ length: 12 }, (_, index) => `{"product":{"id":"X${index}","price":"cheap"}}`);
  let run: Run;
  let errorsFile: string;

  beforeAll(async () => {
    errorsFile = path.join(directory, 'errors.ndjson');
    const lines = ['{"category":{"id":"ok","name":"Fine"}}', ...broken, 'not json'];
    run = await commerceSync(['push', await file('broken.ndjson', lines), '--language', 'errors', '--errors-to', errorsFile]);
  }, CLI_TIMEOUT);

  it('should exit 1 with a summary and the first ten errors', () => {
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/broken\.ndjson -> errors: job [0-9a-f-]{36} completed: 14 lines, 1 saved, 13 failed/);
    expect(run.stderr).toContain('13 lines failed; the first 10:');
    expect(run.stderr).toContain('  line 2: Missing required parameters: name');
    expect(run.stderr).not.toContain('line 12:');
    expect(run.stderr).toContain(`all of them are in ${errorsFile}`);
  });

  it('should write every line error to --errors-to as NDJSON', async () => {
    const errors = (await readFile(errorsFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(errors.map((item) => item.line)).toEqual([...Array.from({ length: 12 }, (_, index) => index + 2), 14]);
    expect(errors[0].error).toEqual({ error: { message: expect.any(String), missing_parameters: ['name'] } });
    expect(errors.at(-1).error).toEqual({ error: { message: 'Malformed JSON on this line' } });
  });

  it('should list the jobs of a language newest first and show one with its errors', async () => {
    const jobs = await commerceSync(['jobs', '--language', 'errors', '--json']);
    expect(jobs.code).toBe(0);
    const [job] = jobs.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(job).toMatchObject({ status: 'completed', lines: 14, lines_stored: 14, lines_applied: 14, saved: 1, failed: 13 });

    const table = await commerceSync(['jobs', '-l', 'errors']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +STATUS +LINES +STORED +APPLIED +FAILED +CREATED$/);
    expect(table.stdout).toContain(job.id);
    expect(table.stderr).toContain('page 1 of 1 (1 job)');

    // Lines failed: non-zero, as the push of the file was.
    const shown = await commerceSync(['job', job.id, '--language', 'errors']);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain(`job:      ${job.id}`);
    expect(shown.stdout).toContain('failed:   13');
    expect(shown.stdout).toContain('line 14: Malformed JSON on this line');
    const json = await commerceSync(['job', job.id, '--language', 'errors', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: job.id, failed: 13 });
  });
});

describe('when every line of a job is saved', { timeout: CLI_TIMEOUT }, () => {
  it('should say `1 line` for one, and `job` should exit 0 for it', async () => {
    const run = await commerceSync(['push', await file('one.ndjson', ['{"category":{"id":"C1","name":"One"}}']), '-l', 'one']);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toMatch(/ completed: 1 line, 1 saved, 0 failed, in /);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(/ completed: 1\/1 line applied, 1 stored, /);
    const id = run.stdout.match(/job ([0-9a-f-]{36})/)![1]!;
    const shown = await commerceSync(['job', id, '-l', 'one']);
    expect(shown, shown.stderr).toMatchObject({ code: 0 });
    expect(shown.stdout).toContain('failed:   0');
  });
});

describe('when a file without lines is pushed', { timeout: 2 * CLI_TIMEOUT }, () => {
  it.each<[string, string | Buffer]>([
    ['empty.ndjson', ''],
    ['blank.ndjson', '\n\n  \n'],
    ['empty.ndjson.gz', gzipSync('')],
  ])('should refuse %s before uploading, and make no job', async (name, content) => {
    const target = path.join(directory, name);
    await writeFile(target, content);
    const run = await commerceSync(['push', target, '-l', 'empty']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`commerce-sync: ${target} holds no lines: nothing to push, no job made\n`);
    const jobs = await commerceSync(['jobs', '-l', 'empty', '--json']);
    expect(jobs, jobs.stderr).toMatchObject({ code: 0, stdout: '' });
  });
});

describe('when a gzip-compressed file is pushed', { timeout: CLI_TIMEOUT }, () => {
  it('should send its lines like those of the plain file', async () => {
    const lines = catalogue(50);
    const run = await commerceSync(['push', await file('catalogue.ndjson.gz', gzipSync(`${lines.join('\n')}\n`)), '-l', 'zipped']);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toContain(`completed: ${lines.length} lines, ${lines.length} saved, 0 failed`);
  });
});

describe('when a file of v2 requests is pushed with --api v2', { timeout: CLI_TIMEOUT }, () => {
  it('should send it to the v2 bulk endpoint and follow it like a v1 file', async () => {
    const lines = [
      '{"category":{"id":"C1","name":"Shoes"}}',
      '{"product":{"id":"P1","name":"Boot","brand_id":"B1","custom_attributes":[{"name":"colour","string_value":"red"}]}}',
      '{"put":"products/P1/categories/C1"}',
      '{"delete":"products/nope"}',
    ];
    const run = await commerceSync(['push', await file('v2.ndjson', lines), '--language', 'v2', '--api', 'v2']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('completed: 4 lines, 3 saved, 1 failed');
    expect(run.stderr).toContain('  line 4: Product not found');
    const product = await env.request('GET', '/api/v2/languages/v2/products/P1', { token: await tokenOf(credentials) });
    expect(product.body).toMatchObject({
      brand_id: 'B1',
      category_ids: ['C1'],
      custom_attributes: [{ name: 'colour', string_value: 'red' }],
    });
  });
});

/** A whole v2 shop: what only v2 can write (custom attributes, brands of products, order lines with variants, statuses, carts, unsubscribes, purchase events). */
function v2Shop(): string[] {
  const attributes = (value: string) => [{ name: 'season', string_value: value }];
  const lines: string[] = [];
  lines.push(
    JSON.stringify({ brand: { id: 'B1', name: 'Acme', custom_attributes: attributes('all'), created_at: at(1), updated_at: at(1) } }),
  );
  for (const c of [2, 1, 0])
    lines.push(
      JSON.stringify({
        category: { id: `C${c}`, name: `Category ${c}`, parent_category_id: c > 0 ? `C${c - 1}` : null, created_at: at(10 + c) },
      }),
    );
  for (let p = 0; p < 120; p += 1) {
    lines.push(
      JSON.stringify({
        product: {
          id: `P${pad(p)}`,
          name: `Product ${p}`,
          brand_id: p % 2 ? 'B1' : null,
          custom_attributes: attributes(`s${p % 4}`),
          created_at: at(100 + p),
        },
      }),
    );
    lines.push(JSON.stringify({ put: `products/P${pad(p)}/categories/C${p % 3}` }));
  }
  // Related products pointing forward and back.
  for (let p = 0; p < 120; p += 7) lines.push(JSON.stringify({ put: `products/P${pad(p)}/relevant_products/P${pad((p + 60) % 120)}` }));
  for (let v = 0; v < 20; v += 1)
    lines.push(
      JSON.stringify({
        variant: { id: `V${v}`, product_id: `P${pad(v)}`, url: 'https://shop.example/v', old_price_incl: 12.5, created_at: at(1_000 + v) },
      }),
    );
  for (let u = 0; u < 10; u += 1)
    lines.push(
      JSON.stringify({
        profile: { id: `u${u}`, email: `u${u}@example.test`, is_company: u % 2 === 0, custom_attributes: attributes('vip') },
      }),
    );
  lines.push(
    JSON.stringify({ review: { id: 'R1', product_id: 'P0001', profile_id: 'u1', description: 'Fine', score: 4, created_at: at(2_000) } }),
  );
  for (let o = 0; o < 10; o += 1)
    lines.push(
      JSON.stringify({
        order: {
          id: `O${o}`,
          profile_id: `u${o}`,
          ordered_at: at(3_000 + o),
          status: 'pending',
          products: [{ id: `P${pad(o)}`, quantity: 2, variant_id: `V${o}`, custom_attributes: attributes('gift') }],
          created_at: at(3_000 + o),
        },
      }),
    );
  lines.push(
    JSON.stringify({ shopping_cart: { id: 'S1', profile_id: 'u2', product_ids: ['P0003'], deleted: true, created_at: at(4_000) } }),
  );
  lines.push(JSON.stringify({ global_unsubscribe: { email: 'u3@example.test', unsubscribed: true } }));
  lines.push(JSON.stringify({ purchase_event: { order_id: 'O4', profile_id: 'u4', visitor_token: 'visitor-4' } }));
  return lines;
}

describe('when a v2 shop is exported with --api v2 and pushed back', { timeout: 4 * CLI_TIMEOUT }, () => {
  it('should give the same catalogue, custom attributes, brands, order lines and events included', async () => {
    const source = await commerceSync(['push', await file('v2-shop.ndjson', v2Shop()), '-l', 'v2-source', '--api', 'v2']);
    expect(source, source.stderr).toMatchObject({ code: 0 });
    const exported = await commerceSync(['export', '-l', 'v2-source', '--api', 'v2']);
    expect(exported, exported.stderr).toMatchObject({ code: 0 });
    expect(exported.stderr).not.toContain('not carried');
    const pushed = await commerceSync([
      'push',
      await file('v2-export.ndjson', exported.stdout.trim().split('\n')),
      '-l',
      'v2-copy',
      '--api',
      'v2',
    ]);
    expect(pushed, pushed.stderr).toMatchObject({ code: 0 });
    const again = await commerceSync(['export', '-l', 'v2-copy', '--api', 'v2']);
    expect(again.stdout).toBe(exported.stdout);
    const token = await tokenOf(credentials);
    for (const record of [
      'products/P0001',
      'products/P0000',
      'categories/C2',
      'brands/B1',
      'variants/V3',
      'profiles/u3',
      'reviews/R1',
      'orders/O4',
      'orders/O4/products',
      'shopping_carts/S1',
      'global_unsubscribes',
      'purchase_events/O4',
    ]) {
      const original = await env.request('GET', `/api/v2/languages/v2-source/${record}`, { token });
      const copy = await env.request('GET', `/api/v2/languages/v2-copy/${record}`, { token });
      expect(original.status, record).toBe(200);
      if (record === 'global_unsubscribes' || record === 'purchase_events/O4') {
        // The service stamps these itself when they are written; everything else is the same.
        const strip = (body: any) =>
          JSON.parse(JSON.stringify(body, (key, value) => (key === 'created_at' || key === 'updated_at' ? undefined : value)));
        expect(strip(copy.body), record).toEqual(strip(original.body));
      } else expect(copy.body, record).toEqual(original.body);
    }
  });
});

describe('when a shop pushes from a terminal', { timeout: 2 * CLI_TIMEOUT }, () => {
  const session = `commerce-sync-${process.pid}`;
  afterAll(() => {
    execFileSync('tmux', ['kill-session', '-t', session], { stdio: 'ignore' });
  });

  /** Runs `command` in the session, waits for its exit marker, and answers the screen (kept in the artefacts as `name`). */
  async function onScreen(command: string, marker: string, name: string): Promise<string> {
    execFileSync('tmux', ['send-keys', '-t', session, `clear; ${command}; echo "${marker}=$?"`, 'Enter']);
    let frame = '';
    const deadline = Date.now() + CLI_TIMEOUT;
    while (!new RegExp(`${marker}=\\d+`).test(frame) && Date.now() < deadline) {
      await sleep(250);
      frame = execFileSync('tmux', ['capture-pane', '-p', '-t', session], { encoding: 'utf8' });
    }
    await mkdir(ARTIFACTS, { recursive: true });
    await writeFile(path.join(ARTIFACTS, name), frame);
    return frame;
  }

  it('should draw a progress bar with lines applied, rate and ETA, and leave the last frame on screen', async () => {
    const source = await file('tty.ndjson', catalogue(1_000));
    // Credentials in the session's environment, so the captured frame shows the command as a shop types it.
    const environment = Object.entries(credentials).flatMap(([name, value]) => ['-e', `${name}=${value}`]);
    execFileSync('tmux', ['new-session', '-d', '-s', session, '-x', '200', '-y', '12', '-c', ROOT, ...environment]);
    execFileSync('tmux', ['send-keys', '-t', session, `clear; node bin/commerce-sync.mjs push ${source} -l tty; echo "EXIT=$?"`, 'Enter']);
    let frame = '';
    const deadline = Date.now() + CLI_TIMEOUT;
    while (!/EXIT=\d+/.test(frame) && Date.now() < deadline) {
      await sleep(250);
      frame = execFileSync('tmux', ['capture-pane', '-p', '-t', session], { encoding: 'utf8' });
    }
    await mkdir(ARTIFACTS, { recursive: true });
    await writeFile(path.join(ARTIFACTS, 'commerce-sync-push-tty.txt'), frame);
    expect(frame).toContain('EXIT=0');
    expect(frame).toMatch(
      /applying █+ 100% \| 1,127\/1,127 lines applied \| 1,127 stored \| [\d,]+ lines\/s \| ETA 0s \| 0 failed \| completed/,
    );
    expect(frame).toMatch(/uploading █+ 100% \|/);
  });

  it('should show the records exported so far and their rate while it exports, and leave the total', async () => {
    const raw = path.join(directory, 'export-tty.raw');
    // Everything written to the terminal, including the lines later drawn over.
    execFileSync('tmux', ['pipe-pane', '-o', '-t', session, `cat >> ${raw}`]);
    const target = path.join(directory, 'export-tty.ndjson');
    const frame = await onScreen(`node bin/commerce-sync.mjs export -l tty -o ${target}`, 'EXPORT_EXIT', 'commerce-sync-export-tty.txt');
    execFileSync('tmux', ['pipe-pane', '-t', session]);
    expect(frame).toContain('EXPORT_EXIT=0');
    expect(frame).toContain('product: 1,000 lines');
    expect(frame).toMatch(/^exported 1,125 records in \d+s \([\d,]+ records\/s\)$/m);
    const written = await readFile(raw, 'utf8');
    // Redrawn in place: a carriage return and an erase of the line before each.
    expect(written).toContain('\r\u001b[Kexporting product: ');
    expect(written).toMatch(/exporting product: [\d,]+ records so far, [\d,]+ records\/s/);
  });
});

describe('when a shop runs it as `npx commerce-sync` from a clone (package.json bin)', { timeout: CLI_TIMEOUT }, () => {
  it("should start the clone's own program and print its usage", async () => {
    const run = await new Promise<Run>((resolve) => {
      // --no: the clone's own bin, never a package fetched from the registry.
      execFile(
        'npx',
        ['--no', '--', 'commerce-sync', '--help'],
        { cwd: ROOT, env: { ...process.env, ...credentials }, timeout: CLI_TIMEOUT },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
      );
    });
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toMatch(/^Usage: commerce-sync/);
  });
});

describe('when the command line is used wrongly or cannot reach the service', { timeout: 2 * CLI_TIMEOUT }, () => {
  it.each([
    [['--help']],
    [['push', '--help']],
    [['export', '--help']],
    [['jobs', '--help']],
    [['job', '--help']],
    [['help', 'push']],
    [[]],
  ])('should print help and exit 0 for %j', async (args: string[]) => {
    const run = await commerceSync(args);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: commerce-sync/);
  });

  let closedPort = 0;
  beforeAll(async () => {
    closedPort = await freePort();
  });
  const unreachable = () => ({ SYNC_URL: `http://127.0.0.1:${closedPort}`, SYNC_CLIENT_ID: 'a', SYNC_CLIENT_SECRET: 'b' });
  it.each<[string, string[], () => Record<string, string>, RegExp]>([
    ['no credentials', ['jobs', '-l', 'nl'], () => ({ SYNC_URL: proxy.url }), /^commerce-sync: client credentials are needed: --client-id/],
    [
      'an unreachable service',
      ['jobs', '-l', 'nl'],
      unreachable,
      /^commerce-sync: cannot reach the service at http:\/\/127\.0\.0\.1:\d+ \(--url or SYNC_URL\): ECONNREFUSED$/m,
    ],
    [
      'a wrong secret',
      ['jobs', '-l', 'nl'],
      () => ({ ...credentials, SYNC_CLIENT_SECRET: 'wrong' }),
      /^commerce-sync: the service refused the client credentials/,
    ],
    ['an unknown language', ['jobs', '-l', 'nope'], () => credentials, /^commerce-sync: Language 'nope' not found/],
    ['a missing file', ['push', 'no-such.ndjson', '-l', 'nl'], () => credentials, /^commerce-sync: cannot read no-such\.ndjson/],
    ['a missing --language', ['export'], () => credentials, /required option '-l, --language <id>' not specified/],
    ['an unknown kind', ['export', '-l', 'nl', '-k', 'widget'], () => credentials, /kind must be one of brand, category/],
    ['an unknown command', ['frob'], () => credentials, /^error: unknown command 'frob'$/m],
    ['help for an unknown command', ['help', 'frob'], () => credentials, /^error: unknown command 'frob'$/m],
  ])('should print one line and exit 2 for %s', async (_case, args, environment, message) => {
    const run = await commerceSync(args, environment());
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('when a file is pushed with a wrong secret', { timeout: CLI_TIMEOUT }, () => {
  it('should say the credentials were refused, and nothing of an upload before', async () => {
    const source = await file('refused.ndjson', catalogue(50));
    const run = await commerceSync(['push', source, '-l', 'nl'], { ...credentials, SYNC_CLIENT_SECRET: 'wrong' });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'commerce-sync: the service refused the client credentials (--client-id/--client-secret or SYNC_CLIENT_ID/SYNC_CLIENT_SECRET)\n',
    );
  });
});

async function tokenOf(shop: Record<string, string>): Promise<string> {
  const response = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: shop['SYNC_CLIENT_ID'], client_secret: shop['SYNC_CLIENT_SECRET'] },
  });
  return response.body.access_token;
}
