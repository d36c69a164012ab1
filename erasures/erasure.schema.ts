import { z } from 'zod';
import { listQuerySchema } from '../catalogue/list-query.schema.js';
import { emailSchema } from '../catalogue/primitives.schema.js';
import { v2IdSchema } from '../catalogue/record-schemas.js';

/** `queued`: accepted; `running`: applied in some language, or being scrubbed; `completed`: every copy erased (interface §24). */
export const ERASURE_STATUSES = ['queued', 'running', 'completed'] as const;

/** POST /api/v2/erasures's `erasure`: exactly one of `email` and `profile_id` (checked after parsing, for its message). */
export const erasureWriteSchema = z
  .object({
    email: emailSchema.optional(),
    profile_id: v2IdSchema.optional(),
    languages: z.array(v2IdSchema).min(1).max(1_000).optional(),
  })
  .strict();
export type ErasureWrite = z.output<typeof erasureWriteSchema>;

/** An erasure as answered: never the email. */
export const erasureSchema = z.object({
  id: z.string(),
  status: z.enum(ERASURE_STATUSES),
  email_sha256: z.string().nullable(),
  profiles_erased: z.number().int(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});
export type Erasure = z.infer<typeof erasureSchema>;

export const erasureListQuerySchema = listQuerySchema.pick({ page: true, per_page: true }).strict();
