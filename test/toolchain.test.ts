import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
