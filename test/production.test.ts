import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dropDatabase, httpRequest, POSTGRES_URL, REDIS_URL, uniqueName } from './support/harness.js';
import { pollUntil } from './support/poll.js';

/*
 * The production path: `npm run build` produces JavaScript that runs with
 * plain node, without tsx (a dev dependency, not installed in production),
 * and the Dockerfile ships all of it.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
};

function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env: { ...process.env, ...env }, timeout: 300_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

/** The package a bare import specifier names (`@scope/name/sub` → `@scope/name`), or null for relative and built-in ones. */
function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
  return builtinModules.includes(name) ? null : name;
}

beforeAll(async () => {
  const build = await run('npm', ['run', 'build']);
  expect(build, build.stderr).toMatchObject({ code: 0 });
}, 600_000);

describe('when the service is built for production', () => {
  it('should produce every command as JavaScript, with the SQL files beside it and no tests', async () => {
    for (const command of ['api', 'worker', 'start', 'migrate', 'cli', 'reset'])
      expect(existsSync(path.join(DIST, 'bin', `${command}.js`)), command).toBe(true);
    expect(existsSync(path.join(DIST, 'client', 'commerce-sync.js'))).toBe(true);
    const files = await filesUnder(DIST);
    const sql = (directory: string) => files.filter((file) => file.startsWith(path.join(DIST, directory)) && file.endsWith('.sql')).length;
    expect(sql('migrations')).toBe((await readdir(path.join(ROOT, 'migrations'))).filter((file) => file.endsWith('.sql')).length);
    expect(sql(path.join('sync', 'sql'))).toBeGreaterThan(0);
    expect(sql(path.join('reads', 'sql'))).toBeGreaterThan(0);
    expect(files.filter((file) => file.endsWith('.test.js') || file.includes(`${path.sep}test${path.sep}`))).toEqual([]);
  });

  it('should import only runtime dependencies (never tsx or another dev dependency)', async () => {
    const imported = new Set<string>();
    for (const file of (await filesUnder(DIST)).filter((name) => name.endsWith('.js'))) {
      const text = await readFile(file, 'utf8');
      for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
        const name = packageOf(match[1]!);
        if (name) imported.add(name);
      }
    }
    expect(imported.has('koa')).toBe(true);
    expect([...imported].filter((name) => !(name in pkg.dependencies)).sort()).toEqual([]);
    expect(Object.keys(pkg.dependencies)).not.toContain('tsx');
  });

  it('should run the built JavaScript with `npm run start:prod` and the Dockerfile', () => {
    expect(pkg.scripts['start:prod']).toBe('node dist/bin/start.js');
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/bin\/api\.js"\]$/m);
    expect(dockerfile).toContain('RUN npm run build');
    expect(dockerfile).toContain('npm ci --omit=dev');
    // Every source folder the build compiles is copied into the build stage.
    const build = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
    for (const folder of build.include) expect(dockerfile, folder).toMatch(new RegExp(`^COPY ${folder} \\./${folder}$`, 'm'));
    expect(pkg.bin['commerce-sync']).toBe('bin/commerce-sync.mjs');
  });
});

describe('when the README tells how to create a client under Docker', () => {
  it("should name the compose service that runs the image, and the image's built CLI", () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const command = /^docker compose exec (\S+) node (\S+) create-client --account \S+$/m.exec(readme);
    expect(command).not.toBeNull();
    const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { image?: string; build?: string }>;
    };
    expect(compose.services[command![1]!]).toMatchObject({ build: '.' });
    // The image's working directory holds dist/ (the built CLI, run with `node dist/bin/cli.js ...` below).
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').split(/^FROM .* AS runtime$/m)[1]!;
    expect(dockerfile).toMatch(/^WORKDIR \/app$/m);
    expect(dockerfile).toContain('COPY --from=build --chown=node:node /app/dist ./dist');
    expect(command![2]).toBe('dist/bin/cli.js');
  });
});

describe('when the built service runs with plain node', { timeout: 300_000 }, () => {
  const databaseName = uniqueName('cs_prod');
  /** The shop CLI's upload, removed afterwards. */
  const uploadFile = path.join(os.tmpdir(), `${databaseName}.ndjson`);
  const databaseUrl = `${POSTGRES_URL}/${databaseName}`;
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    PORT: '0',
    HOST: '127.0.0.1',
    QUEUE_PREFIX: uniqueName('tq'),
    ADMIN_PASSWORD: 'prod-test',
    WORKER_METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    // No loader: a TypeScript import would fail.
    NODE_OPTIONS: '',
  };
  let service: ChildProcess | undefined;
  let baseUrl: string;
  let exited: Promise<number | null>;
  let output = '';

  beforeAll(async () => {
    service = spawn(process.execPath, ['dist/bin/start.js'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    exited = new Promise((resolve) => service!.once('exit', (code) => resolve(code)));
    service.stdout!.on('data', (chunk) => {
      output += chunk;
    });
    service.stderr!.on('data', (chunk) => {
      output += chunk;
    });
    // The API logs the port it listens on (PORT=0 picks a free one).
    const listening = () =>
      output
        .split('\n')
        .filter((line) => line.includes('"api listening"'))
        .map((line) => (JSON.parse(line) as { port: number }).port)[0] ?? 0;
    const port = await pollUntil(
      async () => listening(),
      (value) => value > 0 || service!.exitCode !== null,
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    expect(port, output).toBeGreaterThan(0);
    baseUrl = `http://127.0.0.1:${port}`;
  }, 180_000);

  afterAll(async () => {
    if (service && service.exitCode === null) service.kill('SIGKILL');
    await dropDatabase(databaseName);
    await rm(uploadFile, { force: true });
  });

  it('should say first what it did to the database (created and migrated it)', () => {
    const messages = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages[0]).toMatch(new RegExp(`^created database "${databaseName}" and applied \\d+ migrations$`));
    expect(messages.indexOf('api listening')).toBeGreaterThan(0);
  });

  it('should hint at the built migrate command, never at npm run migrate (which needs tsx)', async () => {
    const missing = uniqueName('cs_prod_missing');
    const bare = { ...env, DATABASE_URL: `${POSTGRES_URL}/${missing}` };
    const refused = await run(process.execPath, ['dist/bin/api.js'], bare);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `Database "${missing}" does not exist on Postgres at 127.0.0.1:5432 (DATABASE_URL): create it with \`node dist/bin/migrate.js\`, or fix DATABASE_URL\n`,
    );
    const help = await run(process.execPath, ['dist/bin/cli.js', '--help'], bare);
    expect(help.stdout).toContain('must exist and be migrated (node dist/bin/migrate.js)');
    expect(help.stdout).not.toContain('npm run migrate');
    // The hint is a command that works from where it was given.
    const migrated = await run(process.execPath, ['dist/bin/migrate.js'], bare);
    await dropDatabase(missing);
    expect(migrated, migrated.stderr).toMatchObject({ code: 0 });
  });

  it('should migrate, serve, take a client from the built CLI and a file from the built shop CLI', async () => {
    expect((await httpRequest(baseUrl, 'GET', '/readyz')).status).toBe(200);
    const created = await run(process.execPath, ['dist/bin/cli.js', 'create-client', '--account', 'prod-shop'], env);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    const client = JSON.parse(created.stdout);
    const shop = { SYNC_URL: baseUrl, SYNC_CLIENT_ID: client.client_id, SYNC_CLIENT_SECRET: client.client_secret, NODE_OPTIONS: '' };
    const token = (
      await httpRequest(baseUrl, 'POST', '/oauth/token', {
        body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
      })
    ).body.access_token;
    await httpRequest(baseUrl, 'POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
    await writeFile(uploadFile, '{"category":{"id":"C1","name":"Shoes"}}\n{"product":{"id":"P1","name":"Boot","category_ids":["C1"]}}\n');
    const pushed = await run(process.execPath, ['dist/client/commerce-sync.js', 'push', uploadFile, '-l', 'nl'], shop);
    expect(pushed, pushed.stderr).toMatchObject({ code: 0 });
    expect(pushed.stdout).toContain('completed: 2 lines, 2 saved, 0 failed');
    const product = await httpRequest(baseUrl, 'GET', '/api/v2/languages/nl/products/P1', { token });
    expect(product.body.category_ids).toEqual(['C1']);
  });

  it('should stop cleanly on SIGTERM', async () => {
    service!.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
