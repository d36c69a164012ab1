import { sql } from 'slonik';
import { compareKeys } from '../../catalogue/key-order.js';
import type { TestEnvironment } from './harness.js';

/**
 * Read helpers over the stored state in Postgres, for asserting exactly what
 * the API and the worker stored (rows, links, audit entries). Every
 * helper addresses a language by its own `id` (as in the v1 paths); pass the
 * account name when the same language id may exist in several accounts.
 */

export type RecordKindName = 'brand' | 'category' | 'product' | 'variant' | 'review' | 'profile' | 'order' | 'shopping_cart';
export type LinkRel = 'product_category' | 'relevant';

export interface StoredRow {
  id: string;
  data: Record<string, unknown>;
  created_at: string | null;
  updated_at: string | null;
}

export interface AuditRow {
  seq: number;
  kind: string;
  record_id: string;
  action: string;
  actor: string;
  request_id: string | null;
  changes: Record<string, unknown>;
}

/**
 * The lang_key of the live language `languageId` (of `account` when given).
 * @throws when there is no such live language, or several and no account was given.
 */
export async function langKeyOf(env: TestEnvironment, languageId: string, account?: string): Promise<number> {
  const accountFilter =
    account === undefined ? sql.fragment`TRUE` : sql.fragment`account_id = (SELECT id FROM accounts WHERE name = ${account})`;
  const rows = await env.db.any(sql.unsafe`
    SELECT lang_key FROM languages WHERE id = ${languageId} AND deleted_at IS NULL AND ${accountFilter}
  `);
  if (rows.length !== 1) {
    throw new Error(`expected one live language '${languageId}'${account ? ` in account ${account}` : ''}, found ${rows.length}`);
  }
  return Number(rows[0]!['lang_key']);
}

/** The visible (live) record, or null when there is none. */
export async function liveRecord(
  env: TestEnvironment,
  languageId: string,
  kind: RecordKindName,
  id: string,
  account?: string,
): Promise<StoredRow | null> {
  const langKey = await langKeyOf(env, languageId, account);
  const row = await env.db.maybeOne(sql.unsafe`
    SELECT id, data, created_at, updated_at FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
  `);
  return (row as StoredRow | null) ?? null;
}

/** The ids of the live records of a kind, sorted. */
export async function liveIds(env: TestEnvironment, languageId: string, kind: RecordKindName, account?: string): Promise<string[]> {
  const langKey = await langKeyOf(env, languageId, account);
  const rows = await env.db.anyFirst(sql.unsafe`
    SELECT id FROM records WHERE lang_key = ${langKey} AND kind = ${kind} AND live
  `);
  // Sorted here, not in SQL, so the order does not depend on the database collation.
  return (rows as string[]).map(String).sort();
}

/** The links of a relation as `[a, b]` pairs, sorted (product_category: [product, category]; relevant: [product, related]). */
export async function linksOf(env: TestEnvironment, languageId: string, rel: LinkRel, account?: string): Promise<Array<[string, string]>> {
  const langKey = await langKeyOf(env, languageId, account);
  const rows = await env.db.any(sql.unsafe`
    SELECT a, b FROM links WHERE lang_key = ${langKey} AND rel = ${rel}
  `);
  return rows
    .map((row): [string, string] => [String(row['a']), String(row['b'])])
    .sort((x, y) => (x[0] === y[0] ? compareKeys(x[1], y[1]) : compareKeys(x[0], y[0])));
}

/** The audit entries of a language, oldest first, optionally of one kind and record. */
export async function auditOf(
  env: TestEnvironment,
  languageId: string,
  filter: { kind?: string; recordId?: string; account?: string } = {},
): Promise<AuditRow[]> {
  const langKey = await langKeyOf(env, languageId, filter.account);
  const kind = filter.kind === undefined ? sql.fragment`TRUE` : sql.fragment`kind = ${filter.kind}`;
  const recordId = filter.recordId === undefined ? sql.fragment`TRUE` : sql.fragment`record_id = ${filter.recordId}`;
  const rows = await env.db.any(sql.unsafe`
    SELECT seq, kind, record_id, action, actor, request_id, changes FROM audit_log
    WHERE lang_key = ${langKey} AND ${kind} AND ${recordId}
    ORDER BY seq
  `);
  return rows as unknown as AuditRow[];
}

/** How many record rows (live or not) a lang_key still has: 0 once a deleted language is purged. */
export async function recordCount(env: TestEnvironment, langKey: number): Promise<number> {
  return Number(await env.db.oneFirst(sql.unsafe`SELECT count(*) FROM records WHERE lang_key = ${langKey}`));
}

/** How many link rows a lang_key still has. */
export async function linkCount(env: TestEnvironment, langKey: number): Promise<number> {
  return Number(await env.db.oneFirst(sql.unsafe`SELECT count(*) FROM links WHERE lang_key = ${langKey}`));
}

/** A data field of a stored record as the API shows it: absent is null. */
export const field = (row: StoredRow | null, name: string): unknown => (row ? (row.data[name] ?? null) : undefined);

/**
 * Everything two languages fed the same requests must agree on: live records,
 * links, and audit entries in order with their actor and changes (not what
 * differs between two runs: numbers, times, request ids).
 */
export async function comparableState(env: TestEnvironment, languageId: string, account?: string) {
  const langKey = await langKeyOf(env, languageId, account);
  const records = await env.db.any(sql.unsafe`
    SELECT kind, id, data FROM records WHERE lang_key = ${langKey} AND live ORDER BY kind, id
  `);
  const links = await env.db.anyFirst(sql.unsafe`
    SELECT rel || ':' || a || '>' || b AS link FROM links WHERE lang_key = ${langKey} ORDER BY 1
  `);
  const audit = await env.db.any(sql.unsafe`
    SELECT kind, record_id, action, actor, changes FROM audit_log
    WHERE lang_key = ${langKey} AND kind <> 'language' ORDER BY seq
  `);
  return {
    records: records as unknown as Array<{ kind: string; id: string; data: Record<string, unknown> }>,
    links: links as string[],
    audit: audit as unknown as Array<Pick<AuditRow, 'kind' | 'record_id' | 'action' | 'actor' | 'changes'>>,
  };
}
