import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/*
 * A webhook's positions and deliveries (migrations/0022_webhooks.sql). Every
 * statement names the account; a pair is one webhook and one language.
 */

export interface Pair {
  accountId: number;
  webhookId: string;
  langKey: number;
}

/** How long a worker holds a pair before another may take it over (it renews the lease as it goes). */
export const LEASE_SECONDS = 60;

const pairTarget = z.object({
  url: z.string(),
  language_id: z.string(),
  kinds: z.array(z.string()).nullable(),
  secret: z.string(),
  previous_secret: z.string().nullable(),
  /** Whether the webhook takes `changes` (else only its other deliveries are sent). */
  changes: z.boolean(),
});
export type PairTarget = z.infer<typeof pairTarget>;

export const undeliveredRow = z.object({
  id: z.string(),
  body: z.string(),
  attempts: z.number(),
  due: z.boolean(),
});
export type Undelivered = z.infer<typeof undeliveredRow>;

/**
 * Takes the pair for this worker (one delivery in flight per webhook and
 * language, interface §23.3); a language without a position starts at its
 * first entry. @returns the position, or null when another worker holds the pair.
 */
export async function leasePair(db: CommonQueryMethods, pair: Pair, token: string): Promise<number | null> {
  return db.maybeOneFirst(sql.type(z.object({ after_seq: z.number() }))`
    INSERT INTO webhook_positions AS p (account_id, webhook_id, lang_key, after_seq, leased_until, lease_token)
    VALUES (${pair.accountId}, ${pair.webhookId}, ${pair.langKey}, 0, now() + make_interval(secs => ${LEASE_SECONDS}), ${token})
    ON CONFLICT (account_id, webhook_id, lang_key) DO UPDATE
      SET leased_until = EXCLUDED.leased_until, lease_token = EXCLUDED.lease_token
      WHERE p.lease_token = EXCLUDED.lease_token OR p.leased_until IS NULL OR p.leased_until < now()
    RETURNING after_seq
  `);
}

export async function releasePair(db: CommonQueryMethods, pair: Pair, token: string): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE webhook_positions SET leased_until = NULL, lease_token = NULL
    WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey} AND lease_token = ${token}
  `);
}

export interface PairStep {
  /** The position: every entry at or below it is in a delivery. */
  after: number;
  /** The webhook and language, when the webhook is active, covers the language, and the language is live. */
  target: PairTarget | null;
  /** The pair's oldest delivery not yet answered 2xx: the only one that may be sent (interface §23.3). */
  waiting: Undelivered | null;
  /** How many deliveries are not yet answered 2xx, counted up to 2. */
  undelivered: number;
}

const stepRow = z.object({
  after_seq: z.number(),
  url: z.string().nullable(),
  language_id: z.string().nullable(),
  kinds: z.array(z.string()).nullable(),
  secret: z.string().nullable(),
  previous_secret: z.string().nullable(),
  changes: z.boolean().nullable(),
  id: z.string().nullable(),
  body: z.string().nullable(),
  attempts: z.number().nullable(),
  due: z.boolean().nullable(),
  undelivered: z.number(),
});

/**
 * Where the pair stands before its next delivery, in one statement: renews
 * this worker's lease and reads the webhook and the oldest undelivered
 * delivery. @returns null when the lease was lost (another worker took the
 * pair, or the webhook was deleted).
 */
export async function nextStep(db: CommonQueryMethods, pair: Pair, token: string): Promise<PairStep | null> {
  const row = await db.maybeOne(sql.type(stepRow)`
    WITH lease AS (
      UPDATE webhook_positions SET leased_until = now() + make_interval(secs => ${LEASE_SECONDS})
      WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey} AND lease_token = ${token}
      RETURNING after_seq
    )
    ${stepSelect(pair, null)}
  `);
  return row && stepOf(row);
}

/** What a run read ahead: the next delivery (none when every entry read was of other kinds) and the position past what it read. */
export interface ReadAhead {
  delivery: NewDelivery | null;
  position: number;
}

/**
 * Marks `delivered` answered 2xx (as markDelivered does), stores what was
 * read ahead while it was in flight (as storeDelivery does: only while this
 * worker holds the pair), and reads the pair's next step (as nextStep does),
 * in one statement. The statement's snapshot shows neither change, so the
 * step leaves the delivered one out, and counts the stored one in `stored`.
 */
export async function markDeliveredThenStep(
  db: CommonQueryMethods,
  pair: Pair,
  token: string,
  delivered: { id: string; statusCode: number },
  ahead: ReadAhead | null,
): Promise<(PairStep & { stored: boolean }) | null> {
  const lease = ahead
    ? sql.fragment`
      UPDATE webhook_positions SET leased_until = now() + make_interval(secs => ${LEASE_SECONDS}), after_seq = ${ahead.position}
      WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey}
        AND lease_token = ${token} AND leased_until > now()
      RETURNING after_seq`
    : sql.fragment`
      UPDATE webhook_positions SET leased_until = now() + make_interval(secs => ${LEASE_SECONDS})
      WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey} AND lease_token = ${token}
      RETURNING after_seq`;
  const store = ahead?.delivery
    ? insertDelivery(pair, ahead.delivery, sql.fragment`lease`)
    : sql.fragment`SELECT NULL::text AS id WHERE false`;
  const row = await db.maybeOne(sql.type(stepRow.extend({ stored: z.boolean() }))`
    WITH ${deliveredStatements(pair, delivered.id, delivered.statusCode)},
    lease AS (${lease}),
    stored AS (${store})
    ${stepSelect(pair, delivered.id, sql.fragment`, EXISTS (SELECT 1 FROM stored) AS stored`)}
  `);
  return row && { ...stepOf(row), stored: row.stored };
}

/** The step's SELECT over a `lease` CTE, leaving `deliveredId` out of what is undelivered. */
const stepSelect = (pair: Pair, deliveredId: string | null, extra = sql.fragment``) => {
  const notDelivered = deliveredId === null ? sql.fragment`` : sql.fragment`AND id <> ${deliveredId}`;
  return sql.fragment`
    SELECT lease.after_seq, t.url, t.language_id, t.kinds, t.secret, t.previous_secret, t.changes, d.id, d.body, d.attempts, d.due,
           (SELECT count(*)::int FROM (
              SELECT 1 FROM webhook_deliveries
              WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey} AND status <> 'delivered'
                ${notDelivered}
              LIMIT 2
            ) u) AS undelivered ${extra}
    FROM lease
    LEFT JOIN LATERAL (
      SELECT w.url, l.id AS language_id, w.kinds, w.secret,
             CASE WHEN w.previous_secret_until > now() THEN w.previous_secret END AS previous_secret,
             'changes' = ANY(w.events) AS changes
      FROM webhooks w
      JOIN languages l ON l.lang_key = ${pair.langKey} AND l.account_id = w.account_id AND l.deleted_at IS NULL
      WHERE w.account_id = ${pair.accountId} AND w.id = ${pair.webhookId} AND w.active
        AND (w.languages IS NULL OR l.id = ANY(w.languages))
    ) t ON true
    LEFT JOIN LATERAL (
      SELECT id::text AS id, body, attempts, next_attempt_at <= now() AS due
      FROM webhook_deliveries
      WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey} AND status <> 'delivered'
        ${notDelivered}
      ORDER BY created_at, first_seq
      LIMIT 1
    ) d ON true
  `;
};

const stepOf = (row: z.infer<typeof stepRow>): PairStep => {
  const target =
    row.url === null
      ? null
      : {
          url: row.url,
          language_id: row.language_id!,
          kinds: row.kinds,
          secret: row.secret!,
          previous_secret: row.previous_secret,
          changes: row.changes!,
        };
  const waiting = row.id === null ? null : { id: row.id, body: row.body!, attempts: row.attempts!, due: row.due! };
  return { after: row.after_seq, target, waiting, undelivered: row.undelivered };
};

/** Moves the position on past entries filtered out, while this worker holds the pair. */
export async function movePosition(db: CommonQueryMethods, pair: Pair, token: string, afterSeq: number): Promise<boolean> {
  const moved = await db.maybeOneFirst(sql.type(z.object({ after_seq: z.number() }))`
    UPDATE webhook_positions SET after_seq = ${afterSeq}
    WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey}
      AND lease_token = ${token} AND leased_until > now()
    RETURNING after_seq
  `);
  return moved !== null;
}

export interface NewDelivery {
  id: string;
  languageId: string;
  entries: number;
  firstSeq: number;
  lastSeq: number;
  body: string;
}

/**
 * Stores the next delivery and moves the position to `position` (past its
 * entries, and past entries of other kinds examined with them), as one
 * statement (so both or neither), while this worker holds the pair.
 * @returns whether it was stored (false: the lease was lost).
 */
export async function storeDelivery(
  db: CommonQueryMethods,
  pair: Pair,
  token: string,
  delivery: NewDelivery,
  position: number,
): Promise<boolean> {
  const stored = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    WITH moved AS (
      UPDATE webhook_positions SET after_seq = ${position}
      WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND lang_key = ${pair.langKey}
        AND lease_token = ${token} AND leased_until > now()
      RETURNING 1
    )
    ${insertDelivery(pair, delivery, sql.fragment`moved`)}
  `);
  return stored !== null;
}

/** Inserts a `changes` delivery once for each row of `source` (a CTE: one row while the lease holds, else none). */
const insertDelivery = (pair: Pair, delivery: NewDelivery, source: ReturnType<typeof sql.fragment>) => sql.fragment`
  INSERT INTO webhook_deliveries
    (id, account_id, webhook_id, lang_key, language_id, type, entries, first_seq, last_seq, body, next_attempt_at, created_at)
  SELECT ${delivery.id}, ${pair.accountId}, ${pair.webhookId}, ${pair.langKey}, ${delivery.languageId}, 'changes',
         ${delivery.entries}, ${delivery.firstSeq}, ${delivery.lastSeq}, ${delivery.body}, now(), clock_timestamp()
  FROM ${source}
  RETURNING id::text AS id
`;

/** Answered 2xx: delivered; the webhook is no longer failing unless another of its deliveries still is. One statement. */
export async function markDelivered(db: CommonQueryMethods, pair: Pair, id: string, statusCode: number): Promise<void> {
  await db.query(sql.unsafe`WITH ${deliveredStatements(pair, id, statusCode)} SELECT 1`);
}

/** markDelivered's two updates, as CTEs (`delivered`, `unfailed`) of a statement. */
const deliveredStatements = (pair: Pair, id: string, statusCode: number) => sql.fragment`
  delivered AS (
    UPDATE webhook_deliveries
    SET status = 'delivered', attempts = attempts + 1, last_status_code = ${statusCode}, last_error = NULL, delivered_at = now()
    WHERE id = ${id} AND account_id = ${pair.accountId}
    RETURNING id
  ),
  unfailed AS (
    UPDATE webhooks SET failing_since = NULL
    WHERE account_id = ${pair.accountId} AND id = ${pair.webhookId} AND failing_since IS NOT NULL
      AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries
        WHERE account_id = ${pair.accountId} AND webhook_id = ${pair.webhookId} AND status = 'failing'
          AND id NOT IN (SELECT id FROM delivered)
      )
    RETURNING 1
  )
`;

/**
 * Not answered 2xx: tried again after `retryMs`. The webhook is failing
 * since its first failure; it is disabled when `disableReason` is given, or
 * when it has failed for `disableAfterMs` (interface §23.4).
 */
export async function markFailed(
  db: CommonQueryMethods,
  pair: Pair,
  id: string,
  outcome: { statusCode: number | null; error: string | null; retryMs: number; disableReason: string | null; disableAfterMs: number },
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE webhook_deliveries
    SET status = 'failing', attempts = attempts + 1, last_status_code = ${outcome.statusCode}, last_error = ${outcome.error},
        next_attempt_at = now() + make_interval(secs => ${outcome.retryMs / 1000})
    WHERE id = ${id} AND account_id = ${pair.accountId}
  `);
  await db.query(sql.unsafe`
    UPDATE webhooks
    SET failing_since = coalesce(failing_since, now()),
        active = active AND ${outcome.disableReason === null}
          AND coalesce(failing_since, now()) > now() - make_interval(secs => ${outcome.disableAfterMs / 1000}),
        disabled_reason = CASE
          WHEN ${outcome.disableReason !== null} THEN ${outcome.disableReason ?? ''}
          WHEN coalesce(failing_since, now()) <= now() - make_interval(secs => ${outcome.disableAfterMs / 1000})
            THEN 'deliveries failed for 24 hours'
          ELSE disabled_reason END
    WHERE account_id = ${pair.accountId} AND id = ${pair.webhookId}
  `);
}

/**
 * The pairs with something to deliver now and no worker on them: a delivery
 * due, or (with none waiting) entries after their position. Postgres says
 * what is pending, so a wake-up lost with Redis only delays it to the next
 * sweep.
 */
export async function pairsWithWork(db: CommonQueryMethods, limit: number): Promise<readonly Pair[]> {
  const rows = await db.any(sql.type(z.object({ account_id: z.number(), webhook_id: z.string(), lang_key: z.number() }))`
    SELECT w.account_id, w.id AS webhook_id, l.lang_key
    FROM webhooks w
    JOIN languages l ON l.account_id = w.account_id AND l.deleted_at IS NULL AND (w.languages IS NULL OR l.id = ANY(w.languages))
    LEFT JOIN webhook_positions p ON p.account_id = w.account_id AND p.webhook_id = w.id AND p.lang_key = l.lang_key
    LEFT JOIN LATERAL (
      SELECT next_attempt_at FROM webhook_deliveries d
      WHERE d.account_id = w.account_id AND d.webhook_id = w.id AND d.lang_key = l.lang_key AND d.status <> 'delivered'
      ORDER BY created_at LIMIT 1
    ) waiting ON true
    WHERE w.active
      AND (p.leased_until IS NULL OR p.leased_until < now())
      AND CASE
        WHEN waiting.next_attempt_at IS NOT NULL THEN waiting.next_attempt_at <= now()
        -- The feed's own read (feed/sql/feed_pages.sql): one step along the index from the position, whatever the statistics say.
        ELSE 'changes' = ANY(w.events) AND EXISTS (
          SELECT 1 FROM feed_audit_page(l.id, l.lang_key, coalesce(p.after_seq, 0), 9223372036854775807, 1, NULL)
        )
      END
    LIMIT ${limit}
  `);
  return rows.map((row) => ({ accountId: row.account_id, webhookId: row.webhook_id, langKey: row.lang_key }));
}

/**
 * How many active webhooks take `changes` of each live language (by
 * lang_key): the languages whose commits may give a webhook work.
 */
export async function changePairsByLanguage(db: CommonQueryMethods): Promise<ReadonlyMap<number, number>> {
  const rows = await db.any(sql.type(z.object({ lang_key: z.number(), pairs: z.number() }))`
    SELECT l.lang_key, count(*)::int AS pairs
    FROM webhooks w
    JOIN languages l ON l.account_id = w.account_id AND l.deleted_at IS NULL AND (w.languages IS NULL OR l.id = ANY(w.languages))
    WHERE w.active AND 'changes' = ANY(w.events)
    GROUP BY l.lang_key
  `);
  return new Map(rows.map((row) => [row.lang_key, row.pairs]));
}
