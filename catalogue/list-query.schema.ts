import { z } from 'zod';
import { decodeCursor } from './list-cursor.js';
import { dateTimeSchema, emailSchema } from './primitives.schema.js';
import { cursorParam, integerParam } from './query-params.schema.js';

export const DEFAULT_PER_PAGE = 10;
export const MAX_PER_PAGE = 250;

/** Page numbers and sizes: up to 16 digits, the most a safe integer is sure to have. */
const pageParam = (min: number, max: number) => integerParam(min, max, 16);

/**
 * A date-time filter. In a query string an unescaped `+` of a zone offset
 * arrives as a space ("...T10:00:00 02:00"); that space is read as the `+`.
 */
const timestampParam = z
  .string()
  .transform((value) => value.replace(/^(.*T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}(?::?\d{2})?)$/i, '$1+$2'))
  .pipe(dateTimeSchema);

/**
 * Query of every v2 list and sub-list (interface §8.7): pagination and strict
 * timestamp filters. Unknown parameters are refused, repeated ones are invalid.
 */
export const listQuerySchema = z
  .object({
    page: pageParam(1, Number.MAX_SAFE_INTEGER).default('1'),
    per_page: pageParam(1, MAX_PER_PAGE).default(String(DEFAULT_PER_PAGE)),
    created_after: timestampParam.optional(),
    created_before: timestampParam.optional(),
    updated_after: timestampParam.optional(),
    updated_before: timestampParam.optional(),
  })
  .strict();

export type ListQuery = z.output<typeof listQuerySchema>;

/** A list without timestamps to filter by (bulk jobs): pagination only. */
export const bulkListQuerySchema = listQuerySchema.pick({ page: true, per_page: true }).strict();

/** The timestamp filters of a list query, ISO 8601 in UTC; each bound is exclusive. */
export type ListFilters = Pick<ListQuery, 'created_after' | 'created_before' | 'updated_after' | 'updated_before'>;

export const hasFilters = (filters: ListFilters): boolean =>
  filters.created_after !== undefined ||
  filters.created_before !== undefined ||
  filters.updated_after !== undefined ||
  filters.updated_before !== undefined;

/** Lists of items without timestamps (order lines, cart products, interface §13.7): pagination only. */
export const pageQuerySchema = listQuerySchema.pick({ page: true, per_page: true }).strict();

export const MAX_EMAILS = 250;

/**
 * `emails[]` of the profiles list (interface §20): repeatable (the only
 * parameter that may repeat), up to 250 emails, compared in lower case.
 */
const emailsParam = z
  .union([z.string(), z.array(z.string())])
  .transform((value) => (Array.isArray(value) ? value : [value]))
  .superRefine((values, ctx) => {
    if (values.length > MAX_EMAILS) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `at most ${MAX_EMAILS} emails` });
    else if (values.some((value) => !emailSchema.safeParse(value).success))
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be emails' });
  })
  .transform((values) => [...new Set(values.map((value) => value.toLowerCase()))]);

/**
 * `cursor` of the record lists: the `meta.next_cursor` of the previous page
 * (reads/list-cursor.ts), instead of `page`.
 */
const listCursorParam = cursorParam(decodeCursor, 'must be the meta.next_cursor of a previous page');

/** The lists of records: pagination by page or by cursor, and the timestamp filters. */
export const recordListQuerySchema = listQuerySchema.extend({ cursor: listCursorParam.optional() }).strict();

export type RecordListQuery = z.output<typeof recordListQuerySchema>;

export const profileListQuerySchema = recordListQuerySchema.extend({ 'emails[]': emailsParam.optional() }).strict();
