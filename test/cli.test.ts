import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startApi } from '../api/server.js';
import { migrate } from '../platform/migrator.js';
import { CLI_TIMEOUT, type CliResult, runCli, runCliWith } from './support/cli.js';
import { ROOT } from './support/command.js';
import { dropDatabase, httpRequest, POSTGRES_URL, testConfig, uniqueName } from './support/harness.js';
import { pollUntil } from './support/poll.js';

const databaseName = uniqueName('cs_cli');

function cli(...args: string[]): Promise<CliResult> {
  return cliOn(databaseName, ...args);
}

function cliOn(database: string, ...args: string[]): Promise<CliResult> {
  return runCli(`${POSTGRES_URL}/${database}`, ...args);
}

const lines = (text: string) => text.split('\n').filter((line) => line !== '');

let api: RunningApi | undefined;
let baseUrl: string;

afterAll(async () => {
  await api?.close();
  await dropDatabase(databaseName);
});

const requestToken = (clientId: string, clientSecret: string) =>
  httpRequest(baseUrl, 'POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret },
  });

describe('when the CLI manages clients', { timeout: 4 * CLI_TIMEOUT }, () => {
  let first: { account: string; client_id: string; client_secret: string };
  let second: typeof first;
  let firstToken: string;

  beforeAll(async () => {
    // The CLI never creates or migrates a database: that is `npm run migrate`'s job.
    await migrate(`${POSTGRES_URL}/${databaseName}`);
    const created = await cli('create-client', '--account', 'shop-a');
    expect(created, created.stderr).toMatchObject({ code: 0 });
    first = JSON.parse(created.stdout);
    api = await startApi(testConfig(databaseName));
    baseUrl = `http://127.0.0.1:${api.port}`;
  }, 2 * CLI_TIMEOUT);

  it('should print exactly one JSON line with account, client_id and client_secret on create-client', async () => {
    const created = await cli('create-client', '--account', 'shop-a');
    expect(created.code).toBe(0);
    expect(created.stdout.endsWith('\n')).toBe(true);
    expect(lines(created.stdout)).toHaveLength(1);
    second = JSON.parse(created.stdout);
    expect(Object.keys(second).sort()).toEqual(['account', 'client_id', 'client_secret']);
    expect(second).toEqual({ account: 'shop-a', client_id: expect.any(String), client_secret: expect.any(String) });
    expect(second.client_id).not.toBe(first.client_id);
    expect(second.client_secret).not.toBe(first.client_secret);
  });

  it('should give a secret that obtains a working token', async () => {
    const response = await requestToken(first.client_id, first.client_secret);
    expect(response.status).toBe(200);
    firstToken = response.body.access_token;
    const saved = await httpRequest(baseUrl, 'POST', '/api/v1/languages/', {
      token: firstToken,
      body: { language: { id: 'nl', name: 'Dutch', code: 'nl', url: 'https://nl.example' } },
    });
    expect(saved.status).toBe(200);
  });

  it('should put a second client of the same account name into the same account', async () => {
    const token = (await requestToken(second.client_id, second.client_secret)).body.access_token;
    // The language the first client saved is visible (and merged into) through the second.
    const saved = await httpRequest(baseUrl, 'POST', '/api/v1/languages/', {
      token,
      body: { language: { id: 'nl', name: 'Dutch', code: 'nl' } },
    });
    expect(saved.status).toBe(200);
    expect(saved.body.language.url).toBe('https://nl.example');
  });

  it('should list one JSON line per client and never a secret', async () => {
    const listed = await cli('list-clients');
    expect(listed.code).toBe(0);
    const rows = lines(listed.stdout).map((line) => JSON.parse(line));
    expect(rows.map((row) => row.client_id)).toEqual([first.client_id, second.client_id]);
    for (const row of rows) {
      expect(row.account).toBe('shop-a');
      expect(Object.keys(row)).not.toContain('client_secret');
      expect(Object.keys(row)).not.toContain('secret_hash');
    }
    expect(listed.stdout).not.toContain(first.client_secret);
    expect(listed.stdout).not.toContain(second.client_secret);
  });

  it("should stop a revoked client's tokens at once and refuse it new ones", async () => {
    const revoked = await cli('revoke-client', '--client-id', first.client_id);
    expect(revoked, revoked.stderr).toMatchObject({ code: 0 });

    // Revocation reaches the running API by Postgres NOTIFY; allow for its delivery.
    const response = await pollUntil(
      () => httpRequest(baseUrl, 'DELETE', '/api/v1/languages/other', { token: firstToken }),
      (r) => r.status === 401,
      { timeoutMs: 2_000 },
    );
    expect(response.status).toBe(401);

    const refused = await requestToken(first.client_id, first.client_secret);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');

    // The other client of the account keeps working.
    expect((await requestToken(second.client_id, second.client_secret)).status).toBe(200);
  });

  it.each([
    ['revoke-client with an unknown id', ['revoke-client', '--client-id', 'no-such-client']],
    ['revoke-client without --client-id', ['revoke-client']],
    ['create-client without --account', ['create-client']],
    ['an unknown command', ['frobnicate']],
    ['set-limit for an unknown account', ['set-limit', '--account', 'no-such-shop', '--rps', '10', '--burst', '0']],
    ['set-limit without --burst', ['set-limit', '--account', 'shop-a', '--rps', '10']],
    ['set-limit with --rps 0', ['set-limit', '--account', 'shop-a', '--rps', '0', '--burst', '0']],
  ])('should exit non-zero with a message on stderr for %s', async (_case, args) => {
    const result = await cli(...args);
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim()).not.toBe('');
    expect(result.stdout).toBe('');
  });
});

describe('when the CLI is pointed at a database it must not use', { timeout: 4 * CLI_TIMEOUT }, () => {
  const missing = uniqueName('cs_cli_missing');
  const empty = uniqueName('cs_cli_empty');
  const exists = async (name: string) =>
    (await query(`${POSTGRES_URL}/postgres`, 'SELECT 1 FROM pg_database WHERE datname = $1', [name])).length > 0;

  afterAll(async () => {
    await dropDatabase(missing);
    await dropDatabase(empty);
  });

  it('should refuse a database that does not exist, in one line, and not create it', async () => {
    const result = await cliOn(missing, 'create-client', '--account', 'typo');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `Database "${missing}" does not exist on Postgres at 127.0.0.1:5432 (DATABASE_URL): create it with \`npm run migrate\`, or fix DATABASE_URL\n`,
    );
    expect(await exists(missing)).toBe(false);
  });

  it('should refuse a database that is not migrated, in one line, and leave it as it is', async () => {
    await query(`${POSTGRES_URL}/postgres`, `CREATE DATABASE ${pg.escapeIdentifier(empty)}`);
    const result = await cliOn(empty, 'list-clients');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^Database "${empty}" at 127\\.0\\.0\\.1:5432 \\(DATABASE_URL\\) is not migrated: 0001_foundation\\.sql, .* pending; run \`npm run migrate\`\\n$`,
      ),
    );
    expect(await query(`${POSTGRES_URL}/${empty}`, "SELECT to_regclass('clients') AS t")).toEqual([{ t: null }]);
  });

  it('should name an unknown command, before looking at the database', async () => {
    const result = await cliOn(missing, 'frobnicate', '--account', 'x');
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^unknown command 'frobnicate'\nUsage: npm run --silent cli -- <command>/);
  });

  it.each([['--help'], ['-h'], ['help'], ['create-client', '--help']])('should print the usage and exit 0 for %s', async (...args) => {
    const result = await cliOn(missing, ...args);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: npm run --silent cli -- <command>/);
  });
});

describe('when DATABASE_URL is only in a .env file in the working directory', { timeout: 3 * CLI_TIMEOUT }, () => {
  const databaseName = uniqueName('cs_cli_dotenv');
  let directory: string;
  /** The test's environment without any of the service's variables: only .env can name the database. */
  const bare = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'DATABASE_URL'));

  beforeAll(async () => {
    await migrate(`${POSTGRES_URL}/${databaseName}`);
    directory = await mkdtemp(path.join(os.tmpdir(), 'cs-dotenv-'));
    await writeFile(
      path.join(directory, '.env'),
      `# as .env.example has it\nDATABASE_URL=${POSTGRES_URL}/${databaseName}\nREDIS_URL="redis://127.0.0.1:6379"\n`,
    );
  }, CLI_TIMEOUT);
  afterAll(async () => {
    await dropDatabase(databaseName);
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('should read it from there and use that database', async () => {
    const created = await runCliWith({ cwd: directory, env: bare }, 'create-client', '--account', 'dotenv-shop');
    expect(created, created.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(created.stdout)).toMatchObject({ account: 'dotenv-shop' });
    expect(await query(`${POSTGRES_URL}/${databaseName}`, 'SELECT count(*)::int AS n FROM clients')).toEqual([{ n: 1 }]);
  });

  it('should be read by every command of the service, where each reads its configuration', async () => {
    // The API and the worker start through runService (bin/run.ts), which reads the configuration with configOrExit.
    const runService = /export async function runService[\s\S]*?\n}/.exec(await readFile(path.join(ROOT, 'bin', 'run.ts'), 'utf8'))?.[0];
    expect(runService).toContain('configOrExit()');
    for (const command of ['api', 'worker'])
      expect(await readFile(path.join(ROOT, 'bin', `${command}.ts`), 'utf8'), command).toContain('await runService(');
    for (const command of ['start', 'migrate', 'cli', 'reset'])
      expect(await readFile(path.join(ROOT, 'bin', `${command}.ts`), 'utf8'), command).toContain('configOrExit()');
  });

  it('should let the real environment win over the file', async () => {
    const elsewhere = uniqueName('cs_cli_not_there');
    const result = await runCliWith({ cwd: directory, env: { ...bare, DATABASE_URL: `${POSTGRES_URL}/${elsewhere}` } }, 'list-clients');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^Database "${elsewhere}" does not exist`));
  });
});

async function query(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}
