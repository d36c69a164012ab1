import { STORED_KINDS } from '../../catalogue/record-kinds.js';
import { auditEntryRow } from '../../sync/audit.repository.js';
import { z } from '../openapi/zod-openapi.js';

/** `kind` in the audit log: the v1 body key of the record, or `language`. */
export const AUDIT_KINDS = ['language', ...STORED_KINDS] as const;

export const AUDIT_DEFAULT_LIMIT = 100;
export const AUDIT_MAX_LIMIT = 1_000;

// Query values arrive as strings (or arrays when repeated, which are refused as invalid).
export const digits = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,18}$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: 'integer', minimum: min, maximum: max });

/** Accounts are named in the admin API as in its answers (`account`): by name. */
export const accountFilter = (what: string) =>
  z
    .string()
    .min(1)
    .max(255)
    .optional()
    .openapi({ description: `Only ${what} of this account (its name, as \`account\` shows it)` });

export const languageFilter = (what: string) =>
  z
    .string()
    .min(1)
    .max(255)
    .optional()
    .openapi({ description: `Only ${what} of this language id` });

const kindFilter = (description: string) => z.enum(AUDIT_KINDS).optional().openapi({ description });

/** Where a page starts: the previous page's `next_after`. */
export const afterFilter = (description: string) => digits(0, Number.MAX_SAFE_INTEGER).optional().openapi({ description });

/** A page's size; `items` names them, capitalised. */
export const pageLimit = (items: string) =>
  digits(1, AUDIT_MAX_LIMIT)
    .optional()
    .openapi({ description: `${items} per page, ${AUDIT_DEFAULT_LIMIT} when not given` });

/** The `next_after` of a page that ends. */
export const nextAfterOfLastPage = z
  .number()
  .int()
  .nullable()
  .openapi({ description: 'Pass as `after` for the next page; null when this is the last' });

/** An answer's `account`. */
export const accountName = z.string().openapi({ description: 'Account (shop) name' });

export const auditQuerySchema = z
  .object({
    account: accountFilter('entries'),
    language_id: languageFilter('entries'),
    kind: kindFilter('Only entries of this kind (the v1 body key, or `language`)'),
    record_id: z.string().min(1).max(255).optional().openapi({ description: 'Only entries of this record id' }),
    after: afterFilter('Only entries with a higher `seq` (the `next_after` of the previous page)'),
    limit: pageLimit('Entries'),
  })
  .strict();

export const auditEntrySchema = auditEntryRow
  .extend({
    seq: z.number().int().openapi({ description: 'Position in the audit log; pass as `after` to read on' }),
    at: z.string().openapi({ format: 'date-time', description: 'When the causing request was accepted' }),
    account: accountName,
    kind: z.enum(AUDIT_KINDS),
    action: z.enum(['create', 'update', 'delete', 'stub', 'link', 'unlink', 'cascade_delete', 'discard', 'erase']).openapi({
      description: '`discard`: an operator gave up a set-aside change (`changes` describes it); `erase`: an erasure deleted the profile',
    }),
    actor: z.string().openapi({ description: 'The client id, `system` for changes the worker made, or `admin:<user>` for an operator' }),
    request_id: z.string().nullable().openapi({ description: 'X-Request-Id of the request that caused the change' }),
    changes: z.record(z.unknown()).openapi({ description: 'Fields changed by this entry' }),
  })
  .openapi('AuditEntry');

export const auditPageSchema = z
  .object({
    data: z.array(auditEntrySchema),
    next_after: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'Pass as `after` for the next page; null when nothing more is there yet' }),
  })
  .openapi('AuditPage');

export const syncStatusSchema = z
  .object({
    pending: z.number().int().openapi({
      description:
        'Accepted requests whose queued effects are not applied yet, each line of a queued or running bulk file counting as one; 0 means drained',
    }),
    failed: z.number().int().openapi({
      description: 'Changes set aside plus bulk files that ended failed in a live language (failed queue jobs are not counted)',
    }),
  })
  .openapi('SyncStatus');

export const setAsideQuerySchema = z
  .object({
    account: accountFilter('changes'),
    language_id: languageFilter('changes'),
    kind: kindFilter('Only changes of this kind (the v1 body key, or `language`)'),
    after: afterFilter('Only changes with a higher `seq` (the `next_after` of the previous page)'),
    limit: pageLimit('Changes'),
  })
  .strict();

export const setAsideRetryAllSchema = z
  .object({
    account: accountFilter('changes'),
    language_id: languageFilter('changes'),
    kind: kindFilter('Only changes of this kind'),
  })
  .strict()
  .openapi('SetAsideRetryFilter', { description: 'Which set-aside changes to retry; `{}` retries all of them' });

export const setAsideChangeSchema = z
  .object({
    seq: z.number().int().openapi({ description: "The change's place in the write order; names it in retry and discard" }),
    account: accountName,
    language_id: z.string(),
    kind: z.enum([...AUDIT_KINDS, 'erasure']).openapi({ description: 'The body key written, or `erasure` for an erasure (interface §24)' }),
    action: z
      .enum(['upsert', 'delete', 'assign', 'unassign', 'erase'])
      .openapi({ description: 'What the change asked the worker to apply' }),
    record_id: z.string(),
    actor: z.string().openapi({ description: 'The client id that made the change' }),
    request_id: z.string().nullable().openapi({ description: 'X-Request-Id of the request that made the change' }),
    error: z.string().nullable().openapi({ description: 'Why the last attempt to apply it failed' }),
    attempts: z.number().int(),
    accepted_at: z.string().openapi({ format: 'date-time', description: 'When the request was accepted' }),
    failed_at: z.string().openapi({ format: 'date-time', description: 'When it was set aside' }),
  })
  .openapi('SetAsideChange');

export const setAsidePageSchema = z
  .object({
    data: z.array(setAsideChangeSchema),
    next_after: nextAfterOfLastPage,
  })
  .openapi('SetAsidePage');

export const setAsideRetriedSchema = z
  .object({ retried: z.array(z.number().int()).openapi({ description: 'The `seq` of every change put back in line' }) })
  .openapi('SetAsideRetried');

export const setAsideDiscardedSchema = z.object({ discarded: setAsideChangeSchema }).openapi('SetAsideDiscarded');
