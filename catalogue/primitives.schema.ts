import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// The schemas here are also the API description's (interface §10.3): formats are stated where they are defined.
extendZodWithOpenApi(z);

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Postgres text and jsonb cannot hold NUL or unpaired surrogates; such input is a client error, never a 500. */
export const isStorableText = (value: string): boolean => !value.includes('\u0000') && !LONE_SURROGATE.test(value);

/** A string Postgres can store, of `min`..`max` characters. */
export const textSchema = (min = 0, max = 65_535) =>
  z.string().min(min).max(max).refine(isStorableText, 'must not contain NUL characters or unpaired surrogates');

/** The longest id, in a body or a path. */
export const MAX_ID_LENGTH = 255;

/** v1 ids and references: a string of 1..255 characters or an integer, stored as the same string (interface §2.1). */
export const idSchema = z
  .union([textSchema(1, MAX_ID_LENGTH), z.number().int().safe()])
  .transform((value) => String(value))
  .pipe(z.string().min(1).max(MAX_ID_LENGTH));

/**
 * The most items any list in a body may hold (id lists, order lines, tags):
 * what one change costs the applier grows with its lists (every id a stub, a
 * link or an unlink, applied in slices), so it is bounded here, not only by
 * the 1 MiB body. 100,000 ids of a product's categories are applied and
 * tested (test/huge-lists.test.ts).
 */
export const MAX_LIST_ITEMS = 100_000;

/** A list in a record, at most MAX_LIST_ITEMS long (400 invalid_parameters beyond). */
export const listOf = <T extends z.ZodTypeAny>(item: T) => z.array(item).max(MAX_LIST_ITEMS);

export const idListSchema = listOf(idSchema);

/** Whether year-month-day names a day of the calendar (no 2023-02-29, no 2024-04-31). */
export function isCalendarDay(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * ISO 8601 date-time, normalised to UTC with millisecond precision. A value
 * without a zone is read as UTC; a bare date is midnight UTC.
 */
export const dateTimeSchema = textSchema(1, 64)
  .openapi({ format: 'date-time', description: 'ISO 8601; without a zone it is UTC; shown in UTC' })
  .transform((value, ctx) => {
    const match = DATE_TIME.exec(value);
    if (match) {
      let text = value.replace(' ', 'T');
      if (!match[4]) text = `${text}T00:00:00Z`;
      else if (!match[7]) text = `${text}Z`;
      const ms = Date.parse(text);
      const year = Number(match[1]);
      const month = Number(match[2]);
      const day = Number(match[3]);
      // Date.parse rolls 2024-02-30 over to March 1st; a date that does not exist is invalid.
      const calendar = new Date(Date.UTC(year, month - 1, day));
      const realDay = calendar.getUTCFullYear() === year && calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day;
      if (!Number.isNaN(ms) && realDay) {
        return new Date(ms).toISOString();
      }
    }
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be an ISO 8601 date-time' });
    return z.NEVER;
  });

export const urlSchema = textSchema(1, 2048)
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an http or https URL')
  .openapi({ format: 'uri', description: 'An http or https URL' });

export const emailSchema = z.string().max(320).email().refine(isStorableText);

export const finiteNumber = z.number().finite();
