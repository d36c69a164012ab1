import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  FEED_DEFAULT_LIMIT,
  FEED_KINDS,
  FEED_MAX_LIMIT,
  FEED_MAX_WAIT_S,
  feedEntrySchema,
  feedPageSchema,
} from '../../feed/feed.schema.js';
import { json, messageErrorSchema, operationsOf, pathParams, SECURITY } from './components.js';
import { z } from './zod-openapi.js';

/* The change feed (interface §22) in the API description; its bodies are feed/feed.schema.ts's. */

const feedQuery = z.object({
  after: z.string().optional().openapi({ description: 'A `cursor` or `meta.next_cursor` the feed answered: the entries after it' }),
  from: z.enum(['now']).optional().openapi({ description: '`now`: empty `data` and the cursor of the head; not with `after`' }),
  limit: z
    .string()
    .optional()
    .openapi({ description: `At most this many entries, 1..${FEED_MAX_LIMIT} (default ${FEED_DEFAULT_LIMIT})`, example: '100' }),
  kinds: z
    .string()
    .optional()
    .openapi({ description: `Only entries of these body keys, comma-separated: ${FEED_KINDS.join(', ')}`, example: 'product,category' }),
  include: z
    .enum(['record'])
    .optional()
    .openapi({ description: '`record`: each entry with its record as GET one answers now (null when gone)' }),
  wait: z
    .string()
    .optional()
    .openapi({
      description: `Seconds (0..${FEED_MAX_WAIT_S}, default 0) to hold the request while nothing is after the cursor`,
      example: '30',
    }),
});

const entry = feedEntrySchema
  .extend({
    id: z.string().openapi({ description: 'Identifies the entry forever: a consumer dedupes by it' }),
    cursor: z.string().openapi({ description: 'Where the feed resumes right after this entry' }),
    kind: z.string().openapi({ description: 'The body key', example: 'product' }),
    action: z
      .string()
      .openapi({ description: '`create`, `update`, `delete`, `link`, `unlink`, `stub`, `erase` (an erasure deleted the profile), ...' }),
    actor: z.string().openapi({ description: 'The client id, or `system` for stubs, links and cascades' }),
    bulk_job_id: z.string().nullable().openapi({ description: 'The bulk job whose line made the change' }),
    occurred_at: z.string().openapi({ format: 'date-time', description: 'When the change was accepted' }),
    record: z
      .record(z.unknown())
      .nullable()
      .optional()
      .openapi({ description: 'With `include=record`: the record in its v2 shape now, or null when it no longer exists' }),
  })
  .openapi('FeedEntry');

const feedPage = feedPageSchema.extend({ data: z.array(entry) }).openapi('FeedPage');

const cursorExpiredSchema = messageErrorSchema
  .extend({ error: z.object({ message: z.string(), reason: z.literal('cursor_expired') }) })
  .openapi('CursorExpiredError');

export function registerFeedPaths(registry: OpenAPIRegistry): void {
  operationsOf(
    registry,
    ['v2'],
    SECURITY.bearer,
  )({
    method: 'get',
    path: '/api/v2/languages/{language_id}/changes',
    operationId: 'v2ListChanges',
    summary: "The language's change feed",
    description:
      "Every audit entry of the language, stubs, links and cascades included, in the language's serial order, after the cursor. Following `meta.next_cursor` gives every entry exactly once. With `wait`, an empty answer is held until an entry arrives.",
    request: { params: pathParams({ language_id: 'The language id (its own `id`)' }), query: feedQuery },
    responses: {
      200: { description: 'Entries after the cursor, oldest first', content: json(feedPage) },
      410: {
        description: 'The cursor is older than the retained history, or the language id was deleted and created again since',
        content: json(cursorExpiredSchema),
      },
      503: {
        description: "The language's audit entries are being written for longer than usual: retry after `Retry-After` seconds",
        headers: { 'Retry-After': { schema: { type: 'string' }, description: 'Seconds to wait' } },
        content: json(messageErrorSchema),
      },
    },
    errors: ['badRequest', 'unauthorized', 'languageNotFound', 'serverError'],
  });
}
