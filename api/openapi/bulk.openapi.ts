import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { MAX_LINE_BYTES } from '../../bulk/ndjson-copy.transform.js';
import { bulkListQuerySchema } from '../../catalogue/list-query.schema.js';
import { MAX_LIST_ITEMS } from '../../catalogue/primitives.schema.js';
import { STORED_KINDS } from '../../catalogue/record-kinds.js';
import type { Generation } from '../../records/record.service.js';
import { json, operationsOf, paginated, pathParams, SECURITY } from './components.js';
import { z } from './zod-openapi.js';

/*
 * The bulk upload and its job reads, for each interface that has them
 * (api/routes/bulk.router.ts): the same operations, with the lines of that
 * interface, v1 wrapping a job in `bulk_job` and v2 answering it bare.
 */

const bulkJobFields = {
  id: z.string().uuid(),
  status: z.enum(['queued', 'running', 'completed', 'failed']).openapi({
    description:
      '`queued` until the worker starts, `running` while it goes through the lines, `completed` once every line is stored or refused (effects may still be applying: see `lines_applied`), `failed` when the job could not go on (`error` says why)',
  }),
  lines: z.number().int().openapi({ description: 'Lines in the file (blank lines are not counted)' }),
  lines_stored: z.number().int().openapi({ description: 'Lines the worker has gone through: stored (readable at once) or refused' }),
  lines_applied: z.number().int().openapi({
    description:
      'Lines whose effects (stubs, links, cascades, audit entries) are applied too; equals `lines` when the file has fully landed',
  }),
  saved: z.number().int().openapi({ description: 'Lines stored' }),
  failed: z.number().int().openapi({ description: 'Lines refused, each with its error' }),
  error: z.string().nullable().openapi({ description: 'Why a `failed` job stopped' }),
  created_at: z.string().openapi({ format: 'date-time' }),
  started_at: z.string().nullable().openapi({ format: 'date-time' }),
  finished_at: z.string().nullable().openapi({ format: 'date-time' }),
};

export const bulkJobSummarySchema = z.object(bulkJobFields).openapi('BulkJobSummary');

export const bulkJobSchema = z
  .object({
    ...bulkJobFields,
    errors: z.array(z.object({ line: z.number().int(), error: z.unknown() })).openapi({
      description: 'The first 1,000 line errors, each the body its single request would have been answered with; all of them at .../errors',
    }),
  })
  .openapi('BulkJob');

const LINES: Record<Generation, string> = {
  v1: 'Each line is a v1 write body (`{"product":{...}}`) or a delete (`{"delete":{"kind":"product","id":"P1"}}`).',
  v2:
    'Each line is one v2 request, applied as if the lines were sent one by one: a PUT body of the collection ' +
    `(\`{"<kind>":{...}}\` for ${STORED_KINDS.join(', ')}), a record delete (\`{"delete":{"kind":"product","id":"P1"}}\` or ` +
    '`{"delete":"products/P1"}`), or a PUT or DELETE of a sub-resource, its path relative to the language with segments ' +
    'percent-encoded: `{"put":"products/P1/categories/C1"}`, `{"delete":"products/P1/relevant_products/P2"}`, ' +
    '`{"put":"orders/O1/products/P1","body":{"quantity":2}}`, `{"put":"shopping_carts/S1/products/P1"}`. ' +
    'A refused line is recorded with the error body its request would get; the file goes on.',
};

const UPLOAD =
  'The file may be gzip-compressed (`Content-Encoding: gzip`). It is stored before the answer: 202 once all of it is ' +
  'durable. An account has at most `BULK_UPLOADS_PER_ACCOUNT` uploads in progress (429 beyond); an upload whose client ' +
  'sends nothing for `BULK_IDLE_TIMEOUT_MS` is cut (408); a file larger than `BULK_MAX_BYTES` once decoded is refused ' +
  '(413). Nothing else cuts an upload, however long it takes while data keeps arriving. A refused or cut upload leaves ' +
  'nothing behind.';

/** The bulk operations of one interface. */
export function registerBulkPaths(registry: OpenAPIRegistry, generation: Generation): void {
  const operation = operationsOf(registry, [generation], SECURITY.bearer);
  const base = `/api/${generation}/languages/{language_id}/bulk`;
  const job = generation === 'v1' ? z.object({ bulk_job: bulkJobSchema }) : bulkJobSchema;
  const languageParams = pathParams({ language_id: 'The language id (its own `id`, not its code)' });
  const jobParams = pathParams({ language_id: 'The language id', job_id: 'The bulk job id from the upload' });
  const operationId = (name: string) => `${generation}${name}`;

  operation({
    method: 'post',
    path: base,
    operationId: operationId('BulkUpload'),
    summary: `Upload an NDJSON file of ${generation} writes, applied in line order in the background`,
    description: `${LINES[generation]} ${UPLOAD}`,
    request: {
      params: languageParams,
      headers: z.object({
        'content-encoding': z
          .enum(['gzip', 'identity'])
          .optional()
          .openapi({ description: '`gzip` for a gzip-compressed file (decoded as it arrives); any other coding is a 415' }),
      }),
      body: {
        required: true,
        content: {
          'application/x-ndjson': {
            schema: z.string().openapi({
              description: `One JSON object per line, each at most ${MAX_LINE_BYTES / 1024 / 1024} MiB (a longer line is refused as that line's error and the file goes on); lists in a line hold at most ${MAX_LIST_ITEMS.toLocaleString('en')} items, as in a single write`,
            }),
          },
        },
      },
    },
    responses: {
      202: {
        description: 'Stored; Location names the job',
        headers: { Location: { schema: { type: 'string' }, description: 'The job URL' } },
        content: json(job),
      },
    },
    errors: [
      'badRequest',
      'unauthorized',
      'languageNotFound',
      'uploadTimeout',
      'bulkTooLarge',
      'bulkUnsupportedMediaType',
      'tooManyUploads',
      'serverError',
    ],
  });
  operation({
    method: 'get',
    path: base,
    operationId: operationId('ListBulkJobs'),
    summary: "The language's bulk uploads (v1 and v2 files), newest first",
    request: { params: languageParams, query: bulkListQuerySchema },
    responses: {
      200: { description: 'A page of jobs', content: json(paginated(bulkJobSummarySchema)) },
    },
    errors: ['badRequest', 'unauthorized', 'languageNotFound', 'serverError'],
  });
  operation({
    method: 'get',
    path: `${base}/{job_id}`,
    operationId: operationId('GetBulkJob'),
    summary: 'Progress and first errors of a bulk upload',
    request: { params: jobParams },
    responses: {
      200: { description: 'The job', content: json(job) },
    },
    errors: ['unauthorized', 'notFound', 'serverError'],
  });
  operation({
    method: 'get',
    path: `${base}/{job_id}/errors`,
    operationId: operationId('ListBulkErrors'),
    summary: 'Every line error of a bulk upload, as NDJSON',
    request: { params: jobParams },
    responses: {
      200: { description: 'One `{"line":N,"error":...}` per line', content: { 'application/x-ndjson': { schema: z.string() } } },
    },
    errors: ['unauthorized', 'notFound', 'serverError'],
  });
}
