import { z } from 'zod';
import { cursorParam, integerParam } from '../catalogue/query-params.schema.js';
import { STORED_KINDS } from '../catalogue/record-kinds.js';
import { decodeFeedCursor } from './feed-cursor.js';

export const FEED_DEFAULT_LIMIT = 100;
export const FEED_MAX_LIMIT = 1_000;
export const FEED_MAX_WAIT_S = 30;

/** `limit` and `wait`: small numbers, so up to 6 digits. */
const smallParam = (min: number, max: number) => integerParam(min, max, 6);

/** The body keys an entry can have: every stored kind, and the language itself (its saves and its delete). */
export const FEED_KINDS = ['language', ...STORED_KINDS] as const;
export type FeedKind = (typeof FEED_KINDS)[number];

const kindsParam = z.string().transform((value, ctx) => {
  const kinds = value.split(',').map((kind) => kind.trim());
  if (kinds.some((kind) => !(FEED_KINDS as readonly string[]).includes(kind))) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be body keys among ${FEED_KINDS.join(', ')}` });
    return z.NEVER;
  }
  return [...new Set(kinds)] as FeedKind[];
});

const feedCursorParam = cursorParam(decodeFeedCursor, 'must be a cursor the feed answered');

/**
 * `after` and `from`: where to start, one way or the other. (A template
 * literal: test/production.test.ts reads `from '...'` in the built code as an
 * import.)
 */
const EXCLUSIVE = new Set(['after', `from`]);

/**
 * GET /changes's query (interface §22.1). Unknown parameters are refused,
 * repeated ones are invalid (a query string repeats as a list).
 */
export const feedQuerySchema = z
  .object({
    after: feedCursorParam.optional(),
    from: z.literal('now').optional(),
    limit: smallParam(1, FEED_MAX_LIMIT).default(String(FEED_DEFAULT_LIMIT)),
    kinds: kindsParam.optional(),
    include: z.literal('record').optional(),
    wait: smallParam(0, FEED_MAX_WAIT_S).default('0'),
  })
  .strict()
  .superRefine((query, ctx) => {
    // Both are named: each is refused because of the other.
    if (query.after !== undefined && query.from !== undefined) {
      for (const name of Object.keys(query).filter((key) => EXCLUSIVE.has(key)))
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: [name], message: 'not both' });
    }
  });

export type FeedQuery = z.output<typeof feedQuerySchema>;

/** One feed entry (interface §22.2), as answered and as a webhook delivery would carry it. */
export const feedEntrySchema = z.object({
  id: z.string(),
  cursor: z.string(),
  kind: z.string(),
  record_id: z.string(),
  action: z.string(),
  changes: z.record(z.unknown()),
  actor: z.string(),
  request_id: z.string().nullable(),
  bulk_job_id: z.string().nullable(),
  occurred_at: z.string(),
  record: z.record(z.unknown()).nullable().optional(),
});
export type FeedEntry = z.infer<typeof feedEntrySchema>;

export const feedPageSchema = z.object({
  data: z.array(feedEntrySchema),
  meta: z.object({ next_cursor: z.string(), has_more: z.boolean() }),
});
export type FeedPage = z.infer<typeof feedPageSchema>;
