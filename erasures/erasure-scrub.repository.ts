import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { PERSONAL_FIELDS } from '../catalogue/record-kinds.js';
import { textArray } from '../platform/db.js';

/*
 * The scrub of an erasure (interface §24): every stored copy of the erased
 * person's data, after the erasure's ordered change was applied in each of
 * its languages. Each statement changes only what still holds that data, so
 * running it again, or after a crash halfway, does what is left and nothing
 * more. None of it takes a language's applier lock.
 */

/** What the ordered change found in one language. */
export const erasedLanguage = z.object({
  erasure_id: z.string(),
  account_id: z.number(),
  lang_key: z.number(),
  write_seq: z.number(),
  email: z.string().nullable(),
  email_sha256: z.string().nullable(),
  profile_ids: z.array(z.string()),
});
export type ErasedLanguage = z.infer<typeof erasedLanguage>;

/** Erasures applied in every language they reach and not completed yet, oldest first. */
export async function erasuresToScrub(db: CommonQueryMethods, limit: number): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT e.id::text AS id FROM erasures e
    WHERE e.status <> 'completed'
      AND NOT EXISTS (SELECT 1 FROM erasure_languages l WHERE l.erasure_id = e.id AND NOT l.applied)
    ORDER BY e.created_at
    LIMIT ${limit}
  `);
}

export async function erasedLanguages(db: CommonQueryMethods, erasureId: string): Promise<readonly ErasedLanguage[]> {
  return db.any(sql.type(erasedLanguage)`
    SELECT l.erasure_id::text AS erasure_id, e.account_id::int AS account_id, l.lang_key::int AS lang_key,
           l.write_seq::bigint AS write_seq, lower(coalesce(l.email, e.email)) AS email, e.email_sha256, l.profile_ids
    FROM erasure_languages l JOIN erasures e ON e.id = l.erasure_id
    WHERE l.erasure_id = ${erasureId} AND l.applied AND e.status <> 'completed'
    ORDER BY l.lang_key
  `);
}

const PERSONAL = Object.entries(PERSONAL_FIELDS).flatMap(([kind, fields]) => fields.map((field) => `${kind}:${field}`));
const DEPENDENT_KINDS = Object.keys(PERSONAL_FIELDS);

/** The records of the language that name an erased profile, as 'kind:id'. */
export async function dependentsOf(db: CommonQueryMethods, erased: ErasedLanguage): Promise<readonly string[]> {
  if (erased.profile_ids.length === 0) return [];
  return db.anyFirst(sql.type(z.object({ key: z.string() }))`
    SELECT kind || ':' || id AS key FROM records
    WHERE lang_key = ${erased.lang_key} AND kind = ANY(${textArray(DEPENDENT_KINDS)})
      AND data ->> 'profile_id' = ANY(${textArray(erased.profile_ids)})
  `);
}

/** The scrubbed form of a row's changes (or payload) column. */
const scrubbed = (erased: ErasedLanguage, dependents: readonly string[], kind: string, recordId: string, changes: string) =>
  sql.fragment`erasure_scrub_changes(${sql.identifier([kind])}, ${sql.identifier([recordId])}, ${sql.identifier([changes])},
    ${erased.email}::text, ${textArray(erased.profile_ids)}, ${textArray(dependents)}, ${textArray(PERSONAL)})`;

/** A global unsubscribe's id is the email: its scrubbed entries carry the email's digest instead. */
const scrubbedRecordId = (erased: ErasedLanguage, kind: string, recordId: string) =>
  sql.fragment`CASE WHEN ${sql.identifier([kind])} = 'global_unsubscribe' AND ${sql.identifier([recordId])} = ${erased.email}::text
    THEN ${erased.email_sha256 ?? ''}::text ELSE ${sql.identifier([recordId])} END`;

/**
 * Audit entries numbered before the erasure of the erased profiles, the
 * email's global unsubscribe and the records naming the profiles: scrubbed,
 * never deleted (their count and order stay). At most `limit` entries.
 * @returns how many were scrubbed.
 */
export async function scrubAuditBatch(
  db: CommonQueryMethods,
  erased: ErasedLanguage,
  dependents: readonly string[],
  limit: number,
): Promise<number> {
  const dependentIds = dependents.map((key) => key.slice(key.indexOf(':') + 1));
  const emailIds = erased.email === null ? [] : [erased.email];
  const changed = await db.query(sql.unsafe`
    UPDATE audit_log SET
      changes = ${scrubbed(erased, dependents, 'kind', 'record_id', 'changes')},
      record_id = ${scrubbedRecordId(erased, 'kind', 'record_id')}
    WHERE seq = ANY(ARRAY(
      SELECT seq FROM audit_log
      WHERE ((kind = 'profile' AND record_id = ANY(${textArray(erased.profile_ids)}))
          OR (kind = 'global_unsubscribe' AND record_id = ANY(${textArray(emailIds)}))
          OR (kind = ANY(${textArray(DEPENDENT_KINDS)}) AND record_id = ANY(${textArray(dependentIds)})
              AND kind || ':' || record_id = ANY(${textArray(dependents)})))
        AND lang_key = ${erased.lang_key} AND write_seq < ${erased.write_seq}
        AND (changes <> ${scrubbed(erased, dependents, 'kind', 'record_id', 'changes')}
          OR record_id <> ${scrubbedRecordId(erased, 'kind', 'record_id')})
      LIMIT ${limit}
    ))
  `);
  return changed.rowCount;
}

/** The account's bulk lines of the language already read that hold the email or an erased profile, and line errors that hold the email. */
export async function scrubBulk(db: CommonQueryMethods, erased: ErasedLanguage): Promise<number> {
  const lines = await db.query(sql.unsafe`
    UPDATE bulk_lines l SET line = '{}'
    FROM bulk_jobs j
    WHERE l.job_id = j.id AND j.account_id = ${erased.account_id} AND j.lang_key = ${erased.lang_key}
      AND l.line_no < j.next_line AND l.line <> '{}'
      AND ((${erased.email}::text IS NOT NULL AND strpos(lower(l.line), ${erased.email}::text) > 0)
        OR (strpos(l.line, '"profile"') > 0
          AND EXISTS (SELECT 1 FROM unnest(${textArray(erased.profile_ids)}) p WHERE strpos(l.line, to_json(p)::text) > 0)))
  `);
  if (erased.email === null) return lines.rowCount;
  const errors = await db.query(sql.unsafe`
    UPDATE bulk_errors e SET error = ${sql.jsonb({ error: 'This message named an erased customer and was removed' })}
    FROM bulk_jobs j
    WHERE e.job_id = j.id AND j.account_id = ${erased.account_id} AND j.lang_key = ${erased.lang_key}
      AND strpos(lower(e.error::text), ${erased.email}::text) > 0
  `);
  return lines.rowCount + errors.rowCount;
}

/**
 * Ends every delivery job's hold on the account's pairs of the language
 * (webhooks/delivery.repository.ts, leasePair): a job that read entries
 * before their scrub can no longer store a delivery made of them, and the
 * pair's next job reads them scrubbed. Waits for a delivery being stored now.
 */
export async function revokeDeliveryLeases(db: CommonQueryMethods, erased: ErasedLanguage): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE webhook_positions SET leased_until = NULL, lease_token = NULL
    WHERE account_id = ${erased.account_id} AND lang_key = ${erased.lang_key} AND lease_token IS NOT NULL
  `);
}

/** The account's stored webhook deliveries of the language: the entries of the erased records scrubbed as the audit log is. */
export async function scrubDeliveries(db: CommonQueryMethods, erased: ErasedLanguage, dependents: readonly string[]): Promise<number> {
  const entry = (field: string) => sql.fragment`(e ->> ${field})`;
  const changed = await db.query(sql.unsafe`
    UPDATE webhook_deliveries d SET body = (
      SELECT jsonb_set(b, '{data}', coalesce((
        SELECT jsonb_agg(
          e || jsonb_build_object(
            'changes', erasure_scrub_changes(${entry('kind')}, ${entry('record_id')}, coalesce(e -> 'changes', '{}'::jsonb),
              ${erased.email}::text, ${textArray(erased.profile_ids)}, ${textArray(dependents)}, ${textArray(PERSONAL)}),
            'record_id', CASE WHEN ${entry('kind')} = 'global_unsubscribe' AND ${entry('record_id')} = ${erased.email}::text
              THEN ${erased.email_sha256 ?? ''}::text ELSE ${entry('record_id')} END
          ) ORDER BY n)
        FROM jsonb_array_elements(b -> 'data') WITH ORDINALITY AS x(e, n)
      ), '[]'::jsonb))::text
      FROM (SELECT d.body::jsonb AS b) s
    )
    WHERE d.account_id = ${erased.account_id} AND d.lang_key = ${erased.lang_key} AND d.type = 'changes'
      AND ((${erased.email}::text IS NOT NULL AND strpos(lower(d.body), ${erased.email}::text) > 0)
        OR EXISTS (SELECT 1 FROM unnest(${textArray([...erased.profile_ids, ...dependents.map((key) => key.slice(key.indexOf(':') + 1))])}) p
                   WHERE strpos(d.body, to_json(p)::text) > 0))
  `);
  return changed.rowCount;
}

/** Set-aside changes numbered before the erasure that still hold the person's data: scrubbed, left for an operator to discard. */
export async function scrubSetAside(db: CommonQueryMethods, erased: ErasedLanguage, dependents: readonly string[]): Promise<number> {
  const changed = await db.query(sql.unsafe`
    UPDATE outbox SET
      payload = CASE WHEN kind = 'profile' AND record_id = ANY(${textArray(erased.profile_ids)})
        THEN jsonb_build_object('id', record_id)
        ELSE ${scrubbed(erased, dependents, 'kind', 'record_id', 'payload')} END,
      record_id = ${scrubbedRecordId(erased, 'kind', 'record_id')}
    WHERE lang_key = ${erased.lang_key} AND seq < ${erased.write_seq} AND failed_at IS NOT NULL
      AND (payload <> ${scrubbed(erased, dependents, 'kind', 'record_id', 'payload')}
        OR record_id <> ${scrubbedRecordId(erased, 'kind', 'record_id')})
  `);
  return changed.rowCount;
}

/** Every copy is erased: the email goes from the erasure's rows, only its digest stays. */
export async function completeErasure(db: CommonQueryMethods, erasureId: string): Promise<void> {
  await db.query(sql.unsafe`UPDATE erasure_languages SET email = NULL WHERE erasure_id = ${erasureId}`);
  await db.query(sql.unsafe`
    UPDATE erasures SET email = NULL, status = 'completed', finished_at = date_trunc('milliseconds', now())
    WHERE id = ${erasureId} AND status <> 'completed'
  `);
}
