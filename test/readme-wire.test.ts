import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { openShop, type Shop } from './support/v2-client.js';

/** What the README shows of the wire is what the service sends. */

const README = readFileSync(path.join(fileURLToPath(new URL('..', import.meta.url)), 'README.md'), 'utf8');

/** The shell commands of the README's code blocks (continued lines joined), each with the comment lines right after it. */
function commands(): Array<{ command: string; comment: string }> {
  const found: Array<{ command: string; comment: string }> = [];
  for (const block of README.match(/```sh\n[\s\S]*?```/g) ?? []) {
    const lines = block.split('\n').slice(1, -1);
    for (let index = 0; index < lines.length; index += 1) {
      if (lines[index]!.startsWith('#')) continue;
      let command = lines[index]!;
      while (command.endsWith('\\') && index + 1 < lines.length) command = `${command.slice(0, -1)} ${lines[++index]}`;
      const comment: string[] = [];
      while (lines[index + 1]?.startsWith('#')) comment.push(lines[++index]!);
      found.push({ command, comment: comment.join('\n') });
    }
  }
  return found;
}

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  shop = await openShop(env);
});
afterAll(async () => {
  await env?.close();
});

describe('when a reader follows the README', () => {
  it('should see the headers of every curl example whose answer is read for a header', () => {
    const needHeaders = commands().filter(({ command, comment }) => /\bcurl\b/.test(command) && /\bLocation\b/.test(comment));
    expect(needHeaders.length).toBeGreaterThanOrEqual(2);
    for (const { command } of needHeaders) expect(command).toMatch(/(?:^|\s)curl\s.*(?:\s-[a-zA-Z]*i\b|\s--include\b|\s-D -)/);
  });

  it("should find the 405 of a record's own path as the README shows it: Allow and message", async () => {
    const allow = README.match(/answers 405 with `Allow: ([^`]+)`/)?.[1];
    const message = README.match(/`(\{"error":\{"message":"Method not allowed: [^`]+)`/)?.[1];
    expect(allow).toBeDefined();
    const response = await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/P-5`, { product: { id: 'P-5' } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(allow);
    expect(response.text).toBe(message!.replace(/\s+/g, ' '));
  });
});
