import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../platform/migrator.js';
import { dropDatabase, POSTGRES_URL, REDIS_URL, uniqueName } from './support/harness.js';
import { freePort } from './support/processes.js';

/*
 * Start-up edges of every command: a missing dependency is one readable line
 * naming the host and the variable, and exit code 1; --help exits 0.
 */

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an entry point to its end (they all give up at once on a missing dependency). */
function run(script: string, env: Record<string, string>, args: string[] = []): Promise<Exit> {
  return new Promise((resolve, reject) => {
    // As spawnEntryPoint does (one node process, tsx as a loader), with arguments.
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      env: { ...process.env, LOG_LEVEL: 'silent', PORT: '0', WORKER_METRICS_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr!.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not exit: ${stderr}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const COMMANDS = ['bin/api.ts', 'bin/worker.ts', 'bin/start.ts', 'bin/migrate.ts', 'bin/cli.ts'];
const migrated = uniqueName('cs_startup');
const unmigrated = uniqueName('cs_startup_empty');
let closedPort: number;

beforeAll(async () => {
  closedPort = await freePort();
  await migrate(`${POSTGRES_URL}/${migrated}`);
  const client = new pg.Client({ connectionString: `${POSTGRES_URL}/postgres` });
  await client.connect();
  await client.query(`CREATE DATABASE ${pg.escapeIdentifier(unmigrated)}`);
  await client.end();
});
afterAll(async () => {
  await dropDatabase(migrated);
  await dropDatabase(unmigrated);
});

describe('when Postgres cannot be reached at start-up', { timeout: 120_000 }, () => {
  it.each(COMMANDS)('should make %s say so in one line naming the host and DATABASE_URL, and exit 1', async (script) => {
    const result = await run(
      script,
      { DATABASE_URL: `postgres://postgres@127.0.0.1:${closedPort}/anything`, REDIS_URL },
      script === 'bin/cli.ts' ? ['list-clients'] : [],
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `Cannot reach Postgres at 127.0.0.1:${closedPort} (DATABASE_URL): connect ECONNREFUSED 127.0.0.1:${closedPort}\n`,
    );
    expect(result.stdout).toBe('');
  });
});

describe('when Redis cannot be reached at start-up', { timeout: 120_000 }, () => {
  it.each(['bin/api.ts', 'bin/worker.ts', 'bin/start.ts'])(
    'should make %s say so in one line naming the host and REDIS_URL, and exit 1',
    async (script) => {
      const result = await run(script, { DATABASE_URL: `${POSTGRES_URL}/${migrated}`, REDIS_URL: `redis://127.0.0.1:${closedPort}` });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `Cannot reach Redis at 127.0.0.1:${closedPort} (REDIS_URL): connect ECONNREFUSED 127.0.0.1:${closedPort}\n`,
      );
    },
  );
});

describe('when the database is missing or not migrated', { timeout: 120_000 }, () => {
  it.each(['bin/api.ts', 'bin/worker.ts'])('should make %s refuse a database that does not exist, in one line', async (script) => {
    const name = uniqueName('cs_startup_missing');
    const result = await run(script, { DATABASE_URL: `${POSTGRES_URL}/${name}`, REDIS_URL });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `Database "${name}" does not exist on Postgres at 127.0.0.1:5432 (DATABASE_URL): create it with \`npm run migrate\`, or fix DATABASE_URL\n`,
    );
  });

  it.each(['bin/api.ts', 'bin/worker.ts'])('should make %s refuse a database that is not migrated, in one line', async (script) => {
    const result = await run(script, { DATABASE_URL: `${POSTGRES_URL}/${unmigrated}`, REDIS_URL });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^Database "cs_startup_empty_\w+" at 127\.0\.0\.1:5432 \(DATABASE_URL\) is not migrated: 0001_foundation\.sql, .* pending; run `npm run migrate`\n$/,
    );
  });
});

describe('when a command is asked for help', { timeout: 120_000 }, () => {
  it.each(COMMANDS)('should make %s print its usage and exit 0', async (script) => {
    const result = await run(script, { DATABASE_URL: `postgres://postgres@127.0.0.1:${closedPort}/anything` }, ['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: /);
    expect(result.stderr).toBe('');
  });

  it('should refuse an argument a command does not take, with its usage, and exit 2', async () => {
    const result = await run('bin/api.ts', {}, ['--port=1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^Unknown argument: --port=1\nUsage: npm run start:api/);
  });
});
