import { z } from 'zod';
import { listQuerySchema } from '../catalogue/list-query.schema.js';
import { FEED_KINDS } from '../feed/feed.schema.js';

/** What a webhook can be sent (interface §23.1). */
export const WEBHOOK_EVENTS = ['changes', 'bulk_job.finished'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** `active`: delivering; `failing`: its last attempt failed, retrying; `disabled`: not delivering (interface §23.4). */
export const WEBHOOK_STATUSES = ['active', 'failing', 'disabled'] as const;

/** PUT /api/v2/webhooks's `webhook` (interface §23.1). Absent lists mean "all, now and later". */
export const webhookWriteSchema = z
  .object({
    id: z.string().min(1).max(255),
    url: z.string().min(1).max(2_048),
    languages: z.array(z.string().min(1).max(255)).max(1_000).optional(),
    kinds: z.array(z.enum(FEED_KINDS)).min(1).max(FEED_KINDS.length).optional(),
    events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length).optional(),
    active: z.boolean().default(true),
  })
  .strict();
export type WebhookWrite = z.output<typeof webhookWriteSchema>;

/** A webhook as answered; `secret` only when it was just created or rotated. */
export const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  languages: z.array(z.string()).nullable(),
  kinds: z.array(z.string()).nullable(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  active: z.boolean(),
  status: z.enum(WEBHOOK_STATUSES),
  failing_since: z.string().nullable(),
  disabled_reason: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  secret: z.string().optional(),
});
export type Webhook = z.infer<typeof webhookSchema>;

export const webhookListQuerySchema = listQuerySchema.pick({ page: true, per_page: true }).strict();
