import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { openShop } from './support/v2-client.js';

/** The README's webhook receiver, run as it is written, receives and verifies real deliveries. */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '50' } });
});
afterAll(async () => {
  await env.close();
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("when the README's receiver runs", () => {
  it('should verify the deliveries and print each entry once', async () => {
    const section = README.slice(README.indexOf('### Webhooks'));
    const code = section.match(/```js\n([\s\S]*?)```/)?.[1];
    expect(code).toContain("from 'standardwebhooks'");
    // Inside the repository, so that `standardwebhooks` resolves as it would after `npm install`.
    const file = path.join(ROOT, 'test', `.readme-receiver-${process.pid}.mjs`);
    writeFileSync(file, code!);
    const shop = await openShop(env);
    await env.drain();
    const port = await freePort();
    const created = await shop.request('PUT', '/api/v2/webhooks', {
      webhook: { id: 'readme', url: `http://127.0.0.1:${port}/`, kinds: ['product'] },
    });
    expect(created.status, created.text).toBe(200);
    const child = spawn(process.execPath, [file], {
      env: { ...process.env, WEBHOOK_SECRET: created.body.secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    try {
      await shop.save('product', { id: 'R1', name: 'n' });
      await shop.save('product', { id: 'R2', name: 'n' });
      const lines = await pollUntil(
        async () => output.trim().split('\n').filter(Boolean),
        (printed) => printed.length >= 2,
        { timeoutMs: 20_000 },
      );
      expect(lines).toEqual([`${shop.lang} product create R1`, `${shop.lang} product create R2`]);
      const list = await shop.request('GET', '/api/v2/webhooks/readme/deliveries');
      expect(list.body.data.every((delivery: any) => delivery.status === 'delivered' && delivery.last_status_code === 204)).toBe(true);
    } finally {
      child.kill();
      rmSync(file, { force: true });
    }
  });
});
