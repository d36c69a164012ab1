import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { z } from 'zod';
import type { Database } from '../platform/db.js';
import { HttpStatusError, RecordNotFoundError } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { requireLanguage } from '../records/language.service.js';
import type { Generation } from '../records/record.service.js';
import {
  type BulkJobRow,
  discardReceivingJob,
  findBulkJob,
  finishReceivingJob,
  linesApplied,
  listBulkErrors,
  listBulkJobs,
  openReceivingJob,
  renewReceivingJob,
} from './bulk.repository.js';
import { CopyBatchWriter } from './copy-batch.writer.js';
import { NdjsonCopyTransform } from './ndjson-copy.transform.js';
import { type ContentCoding, openUploadBody, uploadFailure } from './upload-body.reader.js';

export const INLINE_ERRORS = 1_000;

export interface BulkContext {
  db: Database;
  /** Plain pg connections for streaming COPY, which slonik's API does not offer. */
  copyPool: pg.Pool;
  accountId: number;
  clientId: string;
  requestId: string;
  logger: Logger;
}

export interface UploadLimits {
  /** Uploads of one account being received at once. */
  perAccount: number;
  idleTimeoutMs: number;
  /** Largest file, decoded. */
  maxBytes: number;
}

/**
 * How long an upload holds its account's place without news from its API
 * process, which renews the lease every RECEIVING_RENEW_MS while the upload
 * is alive, whatever its client does (the idle timeout judges the client).
 * An upload whose API process died gives its place back within this; a
 * sweeper removes it a while later (bulk.repository.ts, ABANDONED_AFTER_S).
 */
const RECEIVING_LEASE_S = 10;
const RECEIVING_RENEW_MS = 2_000;

/**
 * Stores an NDJSON upload in `bulk_lines`, then queues its job: when this
 * returns the whole file is durable. The lines are sent with COPY in
 * batches, each on a pooled connection taken for that batch only
 * (CopyBatchWriter), so an upload that stalls holds no connection; until the
 * last batch is stored the job is `receiving`, which no read shows and no
 * worker runs, and an upload that breaks is removed with its lines. Memory
 * use is a couple of batches per upload.
 * @throws {LanguageNotFoundError}
 * @throws {HttpStatusError} 429 when the account has `perAccount` uploads in progress; 408, 413 or 400 from the body.
 */
export async function receiveBulk(
  context: BulkContext,
  languageId: string,
  request: IncomingMessage,
  upload: UploadLimits & { coding: ContentCoding },
  generation: Generation = 'v1',
): Promise<BulkJobRow> {
  const { db } = context;
  const language = await requireLanguage(db, context.accountId, languageId);
  const jobId = randomUUID();
  const opened = await openReceivingJob(
    db,
    {
      id: jobId,
      accountId: context.accountId,
      langKey: language.lang_key,
      languageId,
      clientId: context.clientId,
      requestId: context.requestId,
      apiVersion: generation,
    },
    { maxUploads: upload.perAccount, leaseSeconds: RECEIVING_LEASE_S },
  );
  if (!opened.opened) {
    // The soonest a place can free: when the earliest lease ends unless renewed (at once if its upload is answered first).
    throw new HttpStatusError(
      429,
      `Too many bulk uploads in progress for this account: at most ${upload.perAccount} at a time; send this file once one of them has been answered`,
      { 'Retry-After': String(opened.retryAfterS) },
    );
  }
  const renewal = setInterval(() => {
    renewReceivingJob(db, jobId, RECEIVING_LEASE_S).catch((error: Error) =>
      context.logger.warn({ err: error.message, bulk_job: jobId }, 'could not renew the lease of an upload'),
    );
  }, RECEIVING_RENEW_MS);
  renewal.unref();
  const splitter = new NdjsonCopyTransform(jobId);
  try {
    await pipeline([
      ...openUploadBody(request, upload),
      splitter,
      new CopyBatchWriter(context.copyPool, 'COPY bulk_lines (job_id, line_no, line) FROM STDIN'),
    ]);
    const job = await finishReceivingJob(db, jobId, splitter.lines);
    if (!job) throw new Error(`bulk job ${jobId} was removed while it was received`);
    return job;
  } catch (error) {
    // The lines stored so far go with the job; a sweeper removes it later if this fails too.
    discardReceivingJob(db, jobId).catch((discardError: Error) =>
      context.logger.warn({ err: discardError.message, bulk_job: jobId }, 'could not remove a broken upload'),
    );
    throw uploadFailure(error);
  } finally {
    clearInterval(renewal);
  }
}

/** @throws {LanguageNotFoundError} @throws {RecordNotFoundError} ("Bulk job not found") */
export async function requireBulkJob(db: Database, accountId: number, languageId: string, jobId: string): Promise<BulkJobRow> {
  const language = await requireLanguage(db, accountId, languageId);
  const job = z.string().uuid().safeParse(jobId).success ? await findBulkJob(db, accountId, language.lang_key, jobId) : null;
  if (!job) throw new RecordNotFoundError('Bulk job');
  return job;
}

/** A job as the API shows it in lists: counts and times, without its errors. */
export function summariseBulkJob(job: BulkJobRow, applied: number) {
  return {
    id: job.id,
    status: job.status,
    lines: job.lines,
    lines_stored: job.saved + job.failed,
    // A line counts as applied once its effects are; a refused line has none to wait for.
    lines_applied: Math.min(applied, job.saved + job.failed),
    saved: job.saved,
    failed: job.failed,
    error: job.error,
    created_at: job.created_at,
    started_at: job.started_at,
    finished_at: job.finished_at,
  };
}

export async function presentBulkJob(db: Database, job: BulkJobRow) {
  const [errors, applied] = await Promise.all([listBulkErrors(db, job.id, 0, INLINE_ERRORS), linesApplied(db, job.lang_key, [job.id])]);
  return {
    ...summariseBulkJob(job, applied.get(job.id) ?? 0),
    errors: errors.map((item) => ({ line: item.line_no, error: item.error })),
  };
}

/**
 * A page of the language's bulk jobs, newest first, as v2 lists page.
 * @throws {LanguageNotFoundError}
 */
export async function listBulkJobsPage(db: Database, accountId: number, languageId: string, page: number, perPage: number) {
  const language = await requireLanguage(db, accountId, languageId);
  // A page far past the end is empty; the offset never needs to go beyond the (small) number of jobs.
  const offset = Math.min((page - 1) * perPage, Number.MAX_SAFE_INTEGER);
  const { jobs, total } = await listBulkJobs(db, accountId, language.lang_key, { offset, limit: perPage });
  const applied = await linesApplied(
    db,
    language.lang_key,
    jobs.map((job) => job.id),
  );
  return {
    data: jobs.map((job) => summariseBulkJob(job, applied.get(job.id) ?? 0)),
    meta: { current_page: page, per_page: perPage, total },
  };
}

/** Every line error as NDJSON, read in pages so a huge error list streams. */
export async function* bulkErrorLines(db: Database, jobId: string): AsyncGenerator<string> {
  let after = 0;
  for (;;) {
    const page = await listBulkErrors(db, jobId, after, 1_000);
    // A page at a time: each chunk is sent (and, compressed, flushed) as it is read.
    if (page.length > 0) yield page.map((item) => `${JSON.stringify({ line: item.line_no, error: item.error })}\n`).join('');
    if (page.length < 1_000) return;
    after = page[page.length - 1]!.line_no;
  }
}
