import { type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { PERSONAL_FIELDS } from '../catalogue/record-kinds.js';
import { textArray } from '../platform/db.js';
import { cascadeDeleteMany, lockRow, serialChildrenPage, setSerialState } from './applier.repository.js';
import type { OutboxEntry } from './outbox.repository.js';

type Tx = DatabaseTransactionConnection;

/*
 * An erasure's ordered change in one language (interface §24): applied by the
 * language's applier at its number like any change, so it sees exactly the
 * profiles the language has at that point of the serial order. The erasure's
 * own tables (migrations/0027_erasures.sql) hold whom it erases; the change's
 * payload names only the erasure, so no outbox row holds the email.
 */

/** The outbox kind and action of an erasure's change. */
export const ERASURE_KIND = 'erasure';
export const ERASE_ACTION = 'erase';

/** Whom an erasure looks for in the entry's language. */
export interface ErasureTarget {
  erasureId: string;
  /** Lower-cased; for a profile_id erasure, learned from the profile. */
  email: string | null;
  profileId: string | null;
}

/** The erasure of the entry, or null when it no longer exists (its account is gone). */
export async function erasureTarget(tx: Tx, entry: OutboxEntry): Promise<ErasureTarget | null> {
  const erasureId = String(entry.payload['erasure_id']);
  const row = await tx.maybeOne(sql.type(z.object({ email: z.string().nullable(), profile_id: z.string().nullable() }))`
    SELECT coalesce(l.email, e.email) AS email, e.profile_id FROM erasures e
    JOIN erasure_languages l ON l.erasure_id = e.id AND l.lang_key = ${entry.lang_key}
    WHERE e.id = ${erasureId} AND e.account_id = ${entry.account_id}
  `);
  if (!row) return null;
  await tx.query(sql.unsafe`UPDATE erasures SET status = 'running' WHERE id = ${erasureId} AND status = 'queued'`);
  return { erasureId, email: row.email, profileId: row.profile_id };
}

/**
 * The profile of a profile_id erasure, if it exists at this point of the
 * serial order (or the API shows it and its own change was set aside), with
 * its email (lower-cased), which the erasure records for what follows.
 */
export async function profileOfId(tx: Tx, entry: OutboxEntry, target: ErasureTarget): Promise<{ id: string; email: string | null } | null> {
  if (target.profileId === null) return null;
  const key = { langKey: entry.lang_key, kind: 'profile', id: target.profileId };
  const row = await lockRow(tx, key);
  if (!row) return null;
  let email = row.w_ref;
  if (!row.w_live) {
    // Only a profile the API shows whose own change was set aside before the erasure (see setAsideProfilesOfEmail).
    if (!row.live || row.write_seq >= entry.seq) return null;
    email = await tx.oneFirst(sql.type(z.object({ email: z.string().nullable() }))`
      SELECT lower(data ->> 'email') AS email FROM records
      WHERE lang_key = ${key.langKey} AND kind = 'profile' AND id = ${key.id}
    `);
  }
  if (email !== null) {
    await tx.query(sql.unsafe`
      UPDATE erasure_languages SET email = ${email} WHERE erasure_id = ${target.erasureId} AND lang_key = ${entry.lang_key}
    `);
    await tx.query(sql.unsafe`
      UPDATE erasures SET email_sha256 = encode(sha256(convert_to(${email}::text, 'UTF8')), 'hex')
      WHERE id = ${target.erasureId} AND email_sha256 IS NULL
    `);
  }
  return { id: target.profileId, email };
}

/** The next `limit` profiles that have the email at this point of the serial order (each slice erases the ones before). */
export function profilesOfEmail(tx: Tx, entry: OutboxEntry, email: string, limit: number): Promise<readonly string[]> {
  return serialChildrenPage(tx, entry.lang_key, 'profile', email, null, limit);
}

/**
 * The next `limit` profiles the API shows with the email whose own change
 * was set aside before the erasure (sync/set-aside.service.ts): live in the
 * API view, never in the serial view. The erasure takes them too.
 */
export function setAsideProfilesOfEmail(tx: Tx, entry: OutboxEntry, email: string, limit: number): Promise<readonly string[]> {
  return tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM records
    WHERE lang_key = ${entry.lang_key} AND kind = 'profile' AND live AND lower(data ->> 'email') = ${email}
      AND NOT w_live AND write_seq < ${entry.seq}
    ORDER BY id
    LIMIT ${limit}
  `);
}

/**
 * Set-aside changes numbered before the erasure of the erased profiles, or of
 * the email's global unsubscribe: discarded, as an operator's discard would
 * (their entries name the unsubscribe by the email's digest; they leave out
 * the failure's text, which may quote the row). Returns what was discarded,
 * for the audit entries.
 */
export async function discardSetAsideOf(
  tx: Tx,
  entry: OutboxEntry,
  kind: 'profile' | 'global_unsubscribe',
  ids: readonly string[],
): Promise<ReadonlyArray<{ record_id: string; changes: Record<string, unknown> }>> {
  if (ids.length === 0) return [];
  const rows = await tx.any(
    sql.type(
      z.object({
        record_id: z.string(),
        seq: z.number(),
        action: z.string(),
        request_id: z.string().nullable(),
        accepted_at: z.string(),
      }),
    )`
      DELETE FROM outbox
      WHERE lang_key = ${entry.lang_key} AND kind = ${kind} AND record_id = ANY(${textArray(ids)})
        AND failed_at IS NOT NULL AND seq < ${entry.seq}
      RETURNING record_id, seq, action, request_id,
        to_char(accepted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS accepted_at
    `,
  );
  return rows.map(({ record_id, ...changes }) => ({ record_id, changes }));
}

/**
 * Deletes the profiles of `ids` as a delete numbered as the erasure would
 * (serially, and in the API view unless a later write re-created them),
 * clears the personal fields of the records naming them, and counts them.
 */
export async function eraseProfiles(tx: Tx, entry: OutboxEntry, target: ErasureTarget, email: string | null, ids: readonly string[]) {
  if (ids.length === 0) return;
  await cascadeDeleteMany(tx, entry.lang_key, 'profile', ids, entry.seq);
  for (const [kind, fields] of Object.entries(PERSONAL_FIELDS)) {
    // Every record of the kind that names one of them (no index serves profile_id: the language's records of the kind are read).
    await tx.query(sql.unsafe`
      UPDATE records SET data = (
        SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(data) f
        WHERE NOT (f.key = ANY(${textArray(fields)}) AND coalesce((stamps ->> f.key)::bigint, 0) < ${entry.seq})
          AND NOT (${email}::text IS NOT NULL AND strpos(lower(f.value::text), ${email}::text) > 0)
      )
      WHERE lang_key = ${entry.lang_key} AND kind = ${kind} AND live AND data ->> 'profile_id' = ANY(${textArray(ids)})
    `);
  }
  await tx.query(sql.unsafe`
    UPDATE erasure_languages SET profile_ids = profile_ids || ${textArray(ids)}
    WHERE erasure_id = ${target.erasureId} AND lang_key = ${entry.lang_key}
  `);
  await tx.query(sql.unsafe`UPDATE erasures SET profiles_erased = profiles_erased + ${ids.length} WHERE id = ${target.erasureId}`);
}

/**
 * Removes the language's global unsubscribe of the email, if it exists at
 * this point of the serial order: its row goes entirely (its id is the
 * email), unless a later write made it again. Returns whether it existed.
 */
export async function eraseUnsubscribe(tx: Tx, entry: OutboxEntry, email: string): Promise<boolean> {
  const key = { langKey: entry.lang_key, kind: 'global_unsubscribe', id: email };
  const row = await lockRow(tx, key);
  if (!row) return false;
  if (row.w_live) await setSerialState(tx, key, false, null);
  await tx.query(sql.unsafe`
    DELETE FROM records WHERE lang_key = ${entry.lang_key} AND kind = 'global_unsubscribe' AND id = ${email} AND write_seq < ${entry.seq}
  `);
  return row.w_live;
}

/** The erasure's change is applied in this language: what it found is recorded for the scrub. */
export async function markLanguageErased(tx: Tx, entry: OutboxEntry, target: ErasureTarget): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE erasure_languages SET applied = true WHERE erasure_id = ${target.erasureId} AND lang_key = ${entry.lang_key}
  `);
}

/** The record id an erased email's entries carry from now on. */
export const emailDigest = (tx: Tx, email: string) =>
  tx.oneFirst(sql.type(z.object({ digest: z.string() }))`SELECT encode(sha256(convert_to(${email}::text, 'UTF8')), 'hex') AS digest`);
