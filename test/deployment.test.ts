import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT, startCommand } from './support/command.js';
import { dropDatabase, POSTGRES_URL, REDIS_URL, uniqueName } from './support/harness.js';

/*
 * What an operator gets by default: the compose file holds no secret and keeps
 * the admin-bearing API on loopback, and a service started without
 * ADMIN_PASSWORD says once, at start, that /admin is off.
 */

type Environment = Record<string, string | undefined>;

/**
 * Compose's variable substitution: `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
 * `${NAME:?error}`, `${NAME?error}` and `$$`. A required variable that is missing throws its error, as compose
 * refuses to start.
 */
function interpolate(value: string, environment: Environment): string {
  return value.replace(/\$\$|\$\{(\w+)(?:(:?)([-?])([^}]*))?\}/g, (whole, name: string | undefined, colon, operator, argument) => {
    if (whole === '$$') return '$';
    const set = environment[name!];
    const missing = colon ? !set : set === undefined;
    if (operator === '?' && missing) throw new Error(`required variable ${name} is missing a value: ${argument}`);
    if (operator === '-' && missing) return argument;
    return set ?? '';
  });
}

/** Every string in the document, with where it is. */
function strings(node: unknown, at = ''): Array<[string, string]> {
  if (typeof node === 'string') return [[at, node]];
  if (Array.isArray(node)) return node.flatMap((item, index) => strings(item, `${at}[${index}]`));
  if (node && typeof node === 'object') return Object.entries(node).flatMap(([key, value]) => strings(value, `${at}.${key}`));
  return [];
}

const composeText = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText, { merge: true }) as {
  services: Record<string, { environment?: Record<string, string>; ports?: string[] }>;
};

/** `docker compose` (v2) or `docker-compose` (v1), when the machine has one: it reads the file itself. */
function composeCommand(): string[] | undefined {
  for (const command of [['docker', 'compose'], ['docker-compose']]) {
    try {
      execFileSync(command[0]!, [...command.slice(1), 'version'], { stdio: 'ignore' });
      return command;
    } catch {}
  }
  return undefined;
}

describe('when the stack is started with docker compose', () => {
  it('should give no password or secret a default', () => {
    const defaulted = [...composeText.matchAll(/\$\{(\w*(?:PASSWORD|SECRET)\w*)(?::?-)[^}]*\}/g)].map((match) => match[1]);
    expect(defaulted).toEqual([]);
    for (const [name, service] of Object.entries(compose.services))
      if (service.environment && 'ADMIN_PASSWORD' in service.environment)
        expect(service.environment['ADMIN_PASSWORD'], name).toMatch(/^\$\{ADMIN_PASSWORD:\?[^}]+\}$/);
  });

  it('should refuse to start without ADMIN_PASSWORD, naming it', () => {
    expect(compose.services['api']!.environment!['ADMIN_PASSWORD']).toBeDefined();
    expect(() => strings(compose).map(([, value]) => interpolate(value, {}))).toThrow(/ADMIN_PASSWORD.*set ADMIN_PASSWORD/);
    expect(() => strings(compose).map(([, value]) => interpolate(value, { ADMIN_PASSWORD: '' }))).toThrow(/ADMIN_PASSWORD/);
    expect(() => strings(compose).map(([, value]) => interpolate(value, { ADMIN_PASSWORD: 'a-long-secret' }))).not.toThrow();
  });

  it('should publish the API (and with it /admin) on loopback only, unless API_PUBLISH says otherwise', () => {
    const published = (environment: Environment) =>
      Object.values(compose.services).flatMap((service) => (service.ports ?? []).map((port) => interpolate(port, environment)));
    expect(published({ ADMIN_PASSWORD: 'x' })).toEqual(['127.0.0.1:3000:3000']);
    expect(published({ ADMIN_PASSWORD: 'x', API_PUBLISH: '0.0.0.0:8080' })).toEqual(['0.0.0.0:8080:3000']);
  });

  const command = composeCommand();
  it.runIf(command)('should be what `docker compose config` reads too', () => {
    const config = (environment: Environment) => {
      try {
        const stdout = execFileSync(command![0]!, [...command!.slice(1), 'config'], {
          cwd: ROOT,
          env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...environment },
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        return { code: 0, output: stdout };
      } catch (error) {
        const failed = error as { status: number; stderr: string };
        return { code: failed.status, output: failed.stderr };
      }
    };
    const refused = config({});
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('set ADMIN_PASSWORD');
    const accepted = config({ ADMIN_PASSWORD: 'a-long-secret' });
    expect(accepted.code, accepted.output).toBe(0);
    expect(accepted.output).not.toContain('change-me');
    expect(accepted.output).toMatch(/127\.0\.0\.1/);
  });
});

/** The JSON log lines of a command's output. */
const logLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; stack?: string });

/** The real start command of a clone (npm start runs `tsx bin/start.ts`), as one node process. */
const npmStart = (databaseName: string, environment: Environment = {}) =>
  startCommand(process.execPath, ['--import', 'tsx', 'bin/start.ts'], {
    ...process.env,
    DATABASE_URL: `${POSTGRES_URL}/${databaseName}`,
    REDIS_URL,
    PORT: '0',
    HOST: '127.0.0.1',
    WORKER_METRICS_PORT: '0',
    QUEUE_PREFIX: uniqueName('tq'),
    LOG_LEVEL: 'info',
    ADMIN_PASSWORD: 'a-long-secret',
    ...environment,
  });

describe('when npm start finds no database, and then one up to date', { timeout: 240_000 }, () => {
  const databaseName = uniqueName('cs_deploy_db');
  afterAll(() => dropDatabase(databaseName));

  it('should say first, in one line, that it created and migrated it, and then that it is up to date', async () => {
    const said: string[] = [];
    for (let run = 0; run < 2; run += 1) {
      const start = npmStart(databaseName);
      try {
        await start.waitFor(/"msg":"api listening"/);
        const lines = logLines(start.output());
        said.push(lines[0]!.msg);
        expect(lines.filter((line) => /database/.test(line.msg))).toHaveLength(1);
      } finally {
        expect(await start.stop()).toBe(0);
      }
    }
    expect(said[0]).toMatch(new RegExp(`^created database "${databaseName}" and applied \\d+ migrations$`));
    expect(said[1]).toBe(`database "${databaseName}" is up to date: no migration pending`);
  });
});

describe('when the service starts', { timeout: 240_000 }, () => {
  const databases: string[] = [];
  afterAll(async () => {
    for (const name of databases) await dropDatabase(name);
  });

  it.each([
    ['without ADMIN_PASSWORD', '', 1],
    ['with ADMIN_PASSWORD', 'a-long-secret', 0],
  ])('should log %s as many "admin disabled" warnings as it should (one, or none)', async (_case, password, warnings) => {
    const databaseName = uniqueName('cs_deploy');
    databases.push(databaseName);
    const start = npmStart(databaseName, { ADMIN_PASSWORD: password });
    try {
      await start.waitFor(/"msg":"worker started"/);
      const lines = logLines(start.output());
      const admin = lines.filter((line) => /ADMIN_PASSWORD/.test(line.msg));
      expect(admin).toHaveLength(warnings);
      for (const line of admin) {
        expect(line).toMatchObject({ level: 40, msg: expect.stringMatching(/^admin disabled: ADMIN_PASSWORD is unset/) });
        expect(line.stack).toBeUndefined();
      }
    } finally {
      expect(await start.stop()).toBe(0);
    }
  });
});
