import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/command.js';

/*
 * The Node.js the service supports (an LTS line) is the one it is built,
 * shipped, described and tested with.
 */

const SUPPORTED = 24;
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { engines: { node: string }; devDependencies: Record<string, string> };

describe('when the service is built, shipped or described', () => {
  it(`should name Node.js ${SUPPORTED} in engines, the node types, the Dockerfile and the README`, () => {
    expect(pkg.engines.node).toBe(`>=${SUPPORTED}`);
    expect(pkg.devDependencies['@types/node']).toMatch(new RegExp(`^\\^${SUPPORTED}\\.`));
    const images = [...read('Dockerfile').matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
    expect(images).toEqual([
      `node:${SUPPORTED}-bookworm-slim`,
      'deps',
      `node:${SUPPORTED}-bookworm-slim`,
      `node:${SUPPORTED}-bookworm-slim`,
    ]);
    expect(read('README.md')).toContain(`Node.js ${SUPPORTED}`);
    expect(read('README.md')).not.toMatch(/Node(?:\.js)? 20\b/);
  });
});

describe('when CI runs the tests', { timeout: 300_000 }, () => {
  it(`should run them on Node.js ${SUPPORTED}, installed from the npm registry when the machine's node is another major`, async () => {
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'bash',
        ['-c', 'source .ci/node.sh && node --version && npm --version && command -v node'],
        { cwd: ROOT, env: process.env, timeout: 280_000 },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
      );
    });
    expect(run, run.stderr).toMatchObject({ code: 0 });
    const [version, npmVersion, node] = run.stdout.trim().split('\n');
    expect(version).toMatch(new RegExp(`^v${SUPPORTED}\\.`));
    expect(npmVersion).toMatch(/^\d+\.\d+\.\d+$/);
    // Never the machine's own node replaced: either it is that major already, or the one put first on PATH lives elsewhere.
    if (!process.version.startsWith(`v${SUPPORTED}.`)) expect(node).not.toMatch(/^\/(usr\/)?(local\/)?bin\/node$/);

    const ci = read('.ci/run');
    expect(ci.indexOf('source .ci/node.sh')).toBeGreaterThan(-1);
    expect(ci.indexOf('source .ci/node.sh')).toBeLessThan(ci.indexOf('npm ci'));
    expect(ci).toContain('$(node --version)');
  });
});

describe('when a developer runs the tests as the README says', () => {
  const readme = read('README.md');
  const section = readme.slice(readme.indexOf('### Running the tests'), readme.indexOf('### Benchmark'));
  const sources = readdirSync(path.join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => read(path.join('test', file)))
    .join('\n');

  it('should name every variable the tests read', () => {
    const variables = new Set([...sources.matchAll(/process\.env\['([A-Z_]+)'\]/g)].map((match) => match[1]!));
    variables.delete('PATH');
    variables.delete('HOME');
    expect([...variables].sort()).toEqual(
      expect.arrayContaining(['TEST_LOG_LEVEL', 'TEST_OPENAPI_CHECK', 'TEST_POSTGRES_URL', 'TEST_REDIS_URL']),
    );
    expect([...variables].filter((name) => !section.includes(`\`${name}`))).toEqual([]);
  });

  it('should name every program the tests start', () => {
    // The programs the tests run besides node: a tmux pane, a Postgres server of their own, Debian's Chromium.
    expect(sources).toMatch(/'tmux'/);
    expect(sources).toMatch(/'initdb'/);
    expect(sources).toMatch(/'pg_ctl'/);
    expect(sources).toContain("'/usr/bin/chromium'");
    for (const program of ['`tmux`', '`initdb`', '`pg_ctl`', '`/usr/bin/chromium`']) expect(section, program).toContain(program);
  });

  it('should show how to run one test file', () => {
    const example = /^npx vitest run (test\/\S+\.test\.ts)$/m.exec(section);
    expect(example).not.toBeNull();
    expect(readdirSync(path.join(ROOT, 'test'))).toContain(path.basename(example![1]!));
  });
});
