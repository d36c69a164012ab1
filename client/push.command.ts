import { createReadStream, createWriteStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BulkJob, bulkPath } from './bulk-job.js';
import { createReporter, formatCount, formatDuration } from './progress.reporter.js';
import { ClientError, errorText, type ServiceClient } from './service.client.js';
import type { Terminal } from './terminal.js';

export interface PushOptions {
  language: string;
  /** The interface the file's lines are written for: v1 write bodies, or v2 requests (README "Bulk in v2"). */
  api: 'v1' | 'v2';
  errorsTo?: string;
  wait: boolean;
  json: boolean;
  /** How often the job is polled while it is followed. */
  pollMs: number;
}

/** How many line errors are printed when lines failed (all of them with --errors-to). */
const FIRST_ERRORS = 10;

async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/**
 * Streams the file to the language's bulk endpoint, then follows the job
 * until every line is applied (or the job fails).
 * @returns the process exit code: 0 when every line was saved, 1 when lines or the job failed.
 */
export async function push(client: ServiceClient, file: string, options: PushOptions, terminal: Terminal): Promise<number> {
  const size = (
    await stat(file).catch(() => {
      throw new ClientError(`cannot read ${file}: no such file`);
    })
  ).size;
  const reporter = createReporter(terminal.stderr, { tty: Boolean(terminal.stderr.isTTY) });
  const started = Date.now();

  // Bytes read from the file drive the upload progress (compressed bytes for a .gz file).
  let sent = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      sent += chunk.length;
      reporter.uploading(sent, size);
      callback(null, chunk);
    },
  });
  const source = createReadStream(file);
  source.pipe(counter);
  source.on('error', (error) => counter.destroy(error));
  // A .gz file travels compressed; the service decodes it as it arrives.
  const headers: Record<string, string> = { 'content-type': 'application/x-ndjson' };
  if (await isGzip(file)) headers['content-encoding'] = 'gzip';

  const answer = await client.postStream(bulkPath(options.language, '', options.api), counter, headers);
  if (answer.status !== 202) {
    reporter.stop();
    throw new ClientError(`upload refused: ${errorText(answer.body, answer.status)}`, answer.status);
  }
  // v1 wraps the job as {"bulk_job":{...}}, v2 answers it bare.
  let job = options.api === 'v1' ? (answer.body as { bulk_job: BulkJob }).bulk_job : (answer.body as BulkJob);
  const jobPath = bulkPath(options.language, `/${job.id}`);
  if (!options.wait) {
    reporter.stop();
    terminal.stdout.write(
      options.json ? `${JSON.stringify(job)}\n` : `uploaded ${file}: job ${job.id} (${formatCount(job.lines)} lines) ${job.status}\n`,
    );
    return 0;
  }

  const interrupted = new AbortController();
  const onSignal = () => interrupted.abort();
  process.once('SIGINT', onSignal);
  try {
    for (;;) {
      reporter.update(job);
      if (job.status === 'failed' || (job.status === 'completed' && job.lines_applied >= job.lines)) break;
      try {
        await sleep(options.pollMs, undefined, { signal: interrupted.signal });
      } catch {
        reporter.stop();
        terminal.stderr.write(`stopped following; the job goes on: commerce-sync job ${job.id} --language ${options.language}\n`);
        return 130;
      }
      job = (await client.getJson<{ bulk_job: BulkJob }>(jobPath)).bulk_job;
    }
  } finally {
    process.off('SIGINT', onSignal);
  }
  reporter.stop();

  if (options.errorsTo) {
    const response = await client.request('GET', bulkPath(options.language, `/${job.id}/errors`));
    if (!response.ok || !response.body) throw new ClientError(`could not read the line errors: HTTP ${response.status}`);
    await pipeline(Readable.fromWeb(response.body as never), createWriteStream(options.errorsTo));
  }

  const seconds = (Date.now() - started) / 1000;
  if (options.json) terminal.stdout.write(`${JSON.stringify(job)}\n`);
  else
    terminal.stdout.write(
      `${file} -> ${options.language}: job ${job.id} ${job.status}: ${formatCount(job.lines)} lines, ${formatCount(job.saved)} saved, ` +
        `${formatCount(job.failed)} failed, in ${formatDuration(seconds)} (${formatCount(job.lines / Math.max(seconds, 0.001))} lines/s)\n`,
    );
  if (job.status === 'failed') {
    terminal.stderr.write(`the job failed: ${job.error ?? 'no reason given'}\n`);
    return 1;
  }
  if (job.failed > 0) {
    const shown = job.errors.slice(0, FIRST_ERRORS);
    terminal.stderr.write(`${formatCount(job.failed)} ${job.failed === 1 ? 'line' : 'lines'} failed; the first ${shown.length}:\n`);
    for (const item of shown) terminal.stderr.write(`  line ${item.line}: ${errorText(item.error, 400)}\n`);
    terminal.stderr.write(
      options.errorsTo
        ? `all of them are in ${options.errorsTo}\n`
        : `all of them: --errors-to FILE, or commerce-sync job ${job.id} --language ${options.language}\n`,
    );
    return 1;
  }
  return 0;
}
