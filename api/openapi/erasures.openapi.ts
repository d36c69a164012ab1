import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { erasureSchema, erasureWriteSchema } from '../../erasures/erasure.schema.js';
import { json, operationsOf, paginated, pathParams, SECURITY, WRITE_ERRORS } from './components.js';
import { z } from './zod-openapi.js';

/* Erasures of a customer (interface §24) in the API description; their bodies are erasures/erasure.schema.ts's. */

const erasure = erasureSchema
  .extend({
    id: z.string().openapi({ format: 'uuid' }),
    status: erasureSchema.shape.status.openapi({
      description: '`queued`; `running` (applied in some of its languages, or scrubbing stored copies); `completed`',
    }),
    email_sha256: z.string().nullable().openapi({
      description:
        "Hex SHA-256 of the lower-cased email; for a profile_id erasure, of the erased profile's email (null when none was found)",
    }),
    profiles_erased: z.number().int().openapi({ description: 'Profiles deleted so far' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    finished_at: z.string().nullable().openapi({ format: 'date-time' }),
  })
  .openapi('Erasure');

const envelope = z.object({ erasure }).openapi('ErasureEnvelope');

const pageQuery = z.object({
  page: z.number().int().min(1).optional().openapi({ default: 1 }),
  per_page: z.number().int().min(1).optional(),
});

export function registerErasurePaths(registry: OpenAPIRegistry): void {
  const operation = operationsOf(registry, ['v2'], SECURITY.bearer);
  operation({
    method: 'post',
    path: '/api/v2/erasures',
    operationId: 'v2CreateErasure',
    summary: 'Erase a customer: their profiles, and every stored copy of their data',
    description:
      'Exactly one of `email` (matched case-insensitively) and `profile_id`; `languages` defaults to every language of the account. ' +
      'Ordered like a write in each language: a profile written after this was accepted is not erased.',
    request: {
      body: { required: true, content: json(z.object({ erasure: erasureWriteSchema.openapi('ErasureWrite') }).strict()) },
    },
    responses: { 202: { description: 'Accepted; the worker applies it', content: json(envelope) } },
    errors: WRITE_ERRORS.filter((name) => name !== 'languageNotFound'),
  });
  operation({
    method: 'get',
    path: '/api/v2/erasures',
    operationId: 'v2ListErasures',
    summary: "The account's erasures, oldest first",
    request: { query: pageQuery },
    responses: { 200: { description: 'A page of erasures', content: json(paginated(erasure)) } },
    errors: ['badRequest', 'unauthorized', 'serverError'],
  });
  operation({
    method: 'get',
    path: '/api/v2/erasures/{erasure_id}',
    operationId: 'v2GetErasure',
    summary: 'One erasure',
    request: { params: pathParams({ erasure_id: 'The erasure id' }) },
    responses: { 200: { description: 'The erasure', content: json(envelope) } },
    errors: ['unauthorized', 'recordNotFound', 'serverError'],
  });
}
