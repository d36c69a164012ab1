import { setTimeout as sleep } from 'node:timers/promises';
import { type CommonQueryMethods, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { copyInto, copyJson, copyText } from '../platform/copy-in.js';
import { applierLockHolders } from './locks.js';

export const auditEntryRow = z.object({
  seq: z.number(),
  at: z.string(),
  account: z.string(),
  language_id: z.string(),
  kind: z.string(),
  record_id: z.string(),
  action: z.string(),
  actor: z.string(),
  request_id: z.string().nullable(),
  changes: z.record(z.unknown()),
});
export type AuditEntryRow = z.infer<typeof auditEntryRow>;

export interface AuditFilter {
  /** The account's name. */
  account?: string;
  languageId?: string;
  kind?: string;
  recordId?: string;
  /** Only entries with a higher seq. */
  after: number;
  limit: number;
}

/** An audit entry as the applier writes it: numbered and timed as the change that caused it. */
export interface AuditEntry {
  account_id: number;
  lang_key: number;
  language_id: string;
  kind: string;
  record_id: string;
  action: string;
  actor: string;
  request_id: string | null;
  write_seq: number;
  at: string;
  changes: Record<string, unknown>;
}

/**
 * The NOTIFY channel told, at commit, which languages got audit entries (the
 * payload is the lang_key): change feed readers waiting for a language's next
 * entry wake on it (feed/feed.waiter.ts) instead of each polling with a
 * connection of its own.
 */
export const AUDIT_WRITTEN = 'audit_written';

/** The fields an audit entry shares with the entries around it: those of the same change, or of the same bulk batch. */
const ORIGIN_FIELDS = ['account_id', 'lang_key', 'language_id', 'actor', 'request_id', 'at'] as const;

/** audit_log's columns as the entries are copied: the shared ones first, so a run of entries shares their text. */
const AUDIT_COLUMNS = [...ORIGIN_FIELDS, 'kind', 'record_id', 'action', 'write_seq', 'changes'];

/**
 * Writes a batch's audit entries in one COPY, in the order given (their seq
 * order: audit_log.seq is taken in the order rows arrive). A bulk batch has
 * thousands, and COPY is the cheapest way for Postgres to take them
 * (docs/decisions.md, "Hot paths"). What neighbouring entries share
 * (account, language, actor, request and time: one set for a whole bulk
 * batch) is escaped once.
 */
export async function insertAuditEntries(tx: DatabaseTransactionConnection, entries: readonly AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  let origin: AuditEntry | undefined;
  let prefix = '';
  let rows = '';
  for (const entry of entries) {
    const last = origin;
    if (!last || ORIGIN_FIELDS.some((field) => last[field] !== entry[field])) {
      origin = entry;
      prefix = ORIGIN_FIELDS.map((field) => copyText(entry[field] === null ? null : String(entry[field]))).join('\t');
    }
    rows += `${prefix}\t${copyText(entry.kind)}\t${copyText(entry.record_id)}\t${copyText(entry.action)}\t${entry.write_seq}\t${copyJson(entry.changes)}\n`;
  }
  await copyInto(tx, 'audit_log', AUDIT_COLUMNS, rows);
  // Delivered when the transaction commits, never for one rolled back; Postgres folds repeats within a transaction.
  const langKeys = [...new Set(entries.map((entry) => String(entry.lang_key)))];
  await tx.query(sql.unsafe`SELECT pg_notify(${AUDIT_WRITTEN}, key) FROM unnest(${sql.array(langKeys, 'text')}) AS key`);
}

export class AuditHorizonTimeoutError extends Error {}

/**
 * The highest seq below which the audit log can no longer change.
 *
 * seq comes from a sequence, taken before commit, so a batch holding seq 41 can
 * commit after a batch holding 42; a reader that paged past 42 with `after`
 * would never see 41. Audit entries are written only by the outbox applier
 * (and by an operator discarding a set-aside change, set-aside.service.ts),
 * inside a transaction holding the language's applier lock from its start (see
 * sync/locks.ts). So: read the sequence, then the transactions holding
 * such a lock, and wait until those have ended. Any entry numbered at or below
 * the value read belongs to a transaction that had the lock then, and is now
 * committed or gone.
 */
async function stableHorizon(db: CommonQueryMethods, timeoutMs: number): Promise<number> {
  const horizon = await db.oneFirst(sql.type(z.object({ horizon: z.number() }))`
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS horizon FROM audit_log_seq_seq
  `);
  const writers = await applierLockHolders(db);
  if (writers.length === 0) return horizon;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const running = new Set(await applierLockHolders(db));
    if (!writers.some((writer) => running.has(writer))) return horizon;
    if (Date.now() > deadline) throw new AuditHorizonTimeoutError('audit writers did not finish in time');
    await sleep(10);
  }
}

/**
 * Audit entries, oldest first, with the account's name. Returns at most
 * `limit` entries and the seq to continue after, or null when nothing more is
 * there yet.
 * @throws {AuditHorizonTimeoutError} when an applier batch stays open longer than `horizonTimeoutMs`.
 */
export async function listAuditEntries(
  db: CommonQueryMethods,
  filter: AuditFilter,
  horizonTimeoutMs = 5_000,
): Promise<{ entries: readonly AuditEntryRow[]; nextAfter: number | null }> {
  const horizon = await stableHorizon(db, horizonTimeoutMs);
  const conditions = [sql.fragment`a.seq > ${filter.after}`, sql.fragment`a.seq <= ${horizon}`];
  if (filter.account !== undefined) conditions.push(sql.fragment`a.account_id = (SELECT id FROM accounts WHERE name = ${filter.account})`);
  if (filter.languageId !== undefined) conditions.push(sql.fragment`a.language_id = ${filter.languageId}`);
  if (filter.kind !== undefined) conditions.push(sql.fragment`a.kind = ${filter.kind}`);
  if (filter.recordId !== undefined) conditions.push(sql.fragment`a.record_id = ${filter.recordId}`);
  // One row more than asked tells whether another page follows.
  const rows = await db.any(sql.type(auditEntryRow)`
    SELECT a.seq, a.at, acc.name AS account, a.language_id, a.kind, a.record_id, a.action, a.actor, a.request_id, a.changes
    FROM audit_log a
    JOIN accounts acc ON acc.id = a.account_id
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY a.seq
    LIMIT ${filter.limit + 1}
  `);
  const entries = rows.slice(0, filter.limit);
  return { entries, nextAfter: rows.length > filter.limit ? entries[entries.length - 1]!.seq : null };
}
