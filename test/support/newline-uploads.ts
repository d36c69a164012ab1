import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

/** One upload as the uploader saw it: the answer, and when it started and ended (ms since the epoch). */
export interface NewlineUpload {
  status: number;
  /** The answer's body as the API sent it, for the caller to check. */
  body: any;
  started: number;
  ended: number;
}

/**
 * Uploads 20 MB of newlines again and again, as a client elsewhere would (chunked, each write waiting for the
 * socket), printing each answer as a JSON line. A process of its own: writing to a local socket costs the writer
 * CPU, which would otherwise slow the caller's own reads and be counted as the API's.
 */
const UPLOADER = `
const http = require('node:http');
const [url, token] = process.argv.slice(1);
const newlines = Buffer.alloc(64 * 1024, 10);
const now = () => performance.timeOrigin + performance.now();
const upload = () => new Promise((resolve, reject) => {
  const started = now();
  const request = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/x-ndjson', authorization: 'Bearer ' + token } });
  request.on('error', reject);
  request.on('response', (response) => {
    const parts = [];
    response.on('data', (part) => parts.push(part));
    response.on('end', () => resolve({ status: response.statusCode, body: JSON.parse(Buffer.concat(parts).toString()), started, ended: now() }));
  });
  (async () => {
    for (let sent = 0; sent < 20 * 1024 * 1024; sent += newlines.length) {
      if (!request.write(newlines)) await new Promise((drained) => request.once('drain', drained));
    }
    request.end();
  })();
});
(async () => { for (;;) process.stdout.write(JSON.stringify(await upload()) + '\\n'); })();
`;

/**
 * Starts uploading 20 MB bodies of newlines to a bulk endpoint, one after another, until stopped. The uploader
 * runs at the lowest priority: it stands for a client elsewhere and must not take the CPU the API needs.
 */
export function startNewlineUploads(url: string, token: string): { uploads(): NewlineUpload[]; stop(): void } {
  const client = spawn(process.execPath, ['-e', UPLOADER, url, token], { stdio: ['ignore', 'pipe', 'inherit'] });
  setPriority(client.pid!, 19);
  let output = '';
  client.stdout.on('data', (part: Buffer) => {
    output += part.toString();
  });
  return {
    uploads: () =>
      output
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as NewlineUpload),
    stop: () => client.kill(),
  };
}
