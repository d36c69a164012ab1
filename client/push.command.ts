import { createReadStream, createWriteStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGunzip } from 'node:zlib';
import { type BulkJob, bulkPath, jobFailed } from './bulk-job.js';
import { countOf, createReporter, formatCount, formatDuration } from './progress.reporter.js';
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

/** Whether the file (decoded, when it is gzip) holds anything but white space, i.e. at least one line to send. */
async function hasLines(file: string, gzip: boolean): Promise<boolean> {
  const source = createReadStream(file);
  const decoded = gzip ? source.pipe(createGunzip()) : source;
  source.on('error', (error) => decoded.destroy(error));
  try {
    // Only as far as the first byte that is not white space: a whole file is read only when it is blank.
    for await (const chunk of decoded as AsyncIterable<Buffer>) if (/\S/.test(chunk.toString('latin1'))) return true;
    return false;
  } catch (error) {
    throw new ClientError(`cannot read ${file}: ${(error as Error).message}`);
  } finally {
    source.destroy();
    decoded.destroy();
  }
}

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
  const gzip = await isGzip(file);
  // A file without lines would make a job of nothing that reads as done: it is refused before anything is sent (interface §26.4).
  if (!(await hasLines(file, gzip))) throw new ClientError(`${file} holds no lines: nothing to push, no job made`);
  // Refused credentials are told before the upload starts, without progress lines first.
  await client.authenticate();
  const reporter = createReporter(terminal.stderr, { tty: Boolean(terminal.stderr.isTTY) });

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
  if (gzip) headers['content-encoding'] = 'gzip';

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
      options.json ? `${JSON.stringify(job)}\n` : `uploaded ${file}: job ${job.id} (${countOf(job.lines, 'line')}) ${job.status}\n`,
    );
    return 0;
  }

  let shown = { rate: 0, elapsedSeconds: 0 };
  const interrupted = new AbortController();
  const onSignal = () => interrupted.abort();
  process.once('SIGINT', onSignal);
  try {
    for (;;) {
      shown = reporter.update(job);
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

  // The time and rate of the last progress line, so the two never disagree.
  if (options.json) terminal.stdout.write(`${JSON.stringify(job)}\n`);
  else
    terminal.stdout.write(
      `${file} -> ${options.language}: job ${job.id} ${job.status}: ${countOf(job.lines, 'line')}, ${formatCount(job.saved)} saved, ` +
        `${formatCount(job.failed)} failed, in ${formatDuration(shown.elapsedSeconds)} (${formatCount(shown.rate)} lines/s)\n`,
    );
  if (!jobFailed(job)) return 0;
  if (job.status === 'failed') {
    terminal.stderr.write(`the job failed: ${job.error ?? 'no reason given'}\n`);
    return 1;
  }
  const first = job.errors.slice(0, FIRST_ERRORS);
  terminal.stderr.write(`${countOf(job.failed, 'line')} failed; the first ${first.length}:\n`);
  for (const item of first) terminal.stderr.write(`  line ${item.line}: ${errorText(item.error, 400)}\n`);
  terminal.stderr.write(
    options.errorsTo
      ? `all of them are in ${options.errorsTo}\n`
      : `all of them: --errors-to FILE, or commerce-sync job ${job.id} --language ${options.language}\n`,
  );
  return 1;
}
