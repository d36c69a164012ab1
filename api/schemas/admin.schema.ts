import { STORED_KINDS } from '../../catalogue/record-kinds.js';
import { auditEntryRow } from '../../sync/audit.repository.js';
import { z } from '../openapi/zod-openapi.js';

/** `kind` in the audit log: the v1 body key of the record, or `language`. */
export const AUDIT_KINDS = ['language', ...STORED_KINDS] as const;

export const AUDIT_DEFAULT_LIMIT = 100;
export const AUDIT_MAX_LIMIT = 1_000;

// Query values arrive as strings (or arrays when repeated, which are refused as invalid).
const digits = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,18}$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: 'integer', minimum: min, maximum: max });

export const auditQuerySchema = z
  .object({
    language_id: z.string().min(1).max(255).optional().openapi({ description: 'Only entries of this language id' }),
    kind: z.enum(AUDIT_KINDS).optional().openapi({ description: 'Only entries of this kind (the v1 body key, or `language`)' }),
    record_id: z.string().min(1).max(255).optional().openapi({ description: 'Only entries of this record id' }),
    after: digits(0, Number.MAX_SAFE_INTEGER)
      .optional()
      .openapi({ description: 'Only entries with a higher `seq` (the `next_after` of the previous page)' }),
    limit: digits(1, AUDIT_MAX_LIMIT)
      .optional()
      .openapi({ description: `Entries per page, ${AUDIT_DEFAULT_LIMIT} when not given` }),
  })
  .strict();

export const auditEntrySchema = auditEntryRow
  .extend({
    seq: z.number().int().openapi({ description: 'Position in the audit log; pass as `after` to read on' }),
    at: z.string().openapi({ format: 'date-time', description: 'When the causing request was accepted' }),
    account: z.string().openapi({ description: 'Account (shop) name' }),
    kind: z.enum(AUDIT_KINDS),
    action: z.enum(['create', 'update', 'delete', 'stub', 'link', 'unlink', 'cascade_delete']),
    actor: z.string().openapi({ description: 'The client id, or `system` for changes the worker made' }),
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
    pending: z.number().int().openapi({ description: 'Accepted requests whose queued effects are not applied yet; 0 means drained' }),
    failed: z.number().int().openapi({ description: 'Changes set aside as failed plus failed jobs in every queue' }),
  })
  .openapi('SyncStatus');
