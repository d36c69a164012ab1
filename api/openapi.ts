import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { registerAdminPaths } from './openapi/admin.openapi.js';
import { ERROR_RESPONSES, registerSecuritySchemes } from './openapi/components.js';
import { registerOAuthPaths } from './openapi/oauth.openapi.js';
import { registerOperationsPaths } from './openapi/operations.openapi.js';
import { registerV1Paths } from './openapi/v1.openapi.js';

/*
 * The API description (interface §10.3): OpenAPI 3.1 generated from the zod
 * schemas that validate requests. Each interface describes its operations in a
 * registrar; the document is the union of all registrars.
 *
 * Adding an interface takes one call, next to its router (e.g. in v2.router.ts):
 *
 *   registerOpenApi('v2', (registry) => {
 *     const operation = operationsOf(registry, ['v2'], SECURITY.bearer);
 *     operation({ method: 'get', path: '/api/v2/...', operationId: '...', summary: '...',
 *       responses: { 200: {...} }, errors: ['badRequest', 'unauthorized', 'serverError'] });
 *   });
 *
 * test/openapi.test.ts fails while a served route is missing from the document.
 */

export { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
export * from './openapi/components.js';
export { z } from './openapi/zod-openapi.js';

export type OpenApiRegistrar = (registry: OpenAPIRegistry) => void;

const registrars = new Map<string, OpenApiRegistrar>([
  ['oauth', registerOAuthPaths],
  ['v1', registerV1Paths],
  ['admin', registerAdminPaths],
  ['operations', registerOperationsPaths],
]);

/** Adds (or, for the same name, replaces) an interface's paths. Call at module load, before the first document is built. */
export function registerOpenApi(name: string, registrar: OpenApiRegistrar): void {
  registrars.set(name, registrar);
}

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

const SECURITY_NOTES: Record<string, string> = {
  bearerAuth: 'Needs `Authorization: Bearer <token>` (POST /oauth/token).',
  adminBasic: 'Needs HTTP Basic with ADMIN_USER and ADMIN_PASSWORD.',
  clientBasic: 'Client credentials in HTTP Basic or in the body.',
};

/**
 * What every operation shares, added once here rather than by each
 * registrar: the 405 of its path (interface §11: a wrong method on a known
 * path), the request limit of bearer operations, and a description (the
 * summary, with how to authenticate).
 */
const integerHeader = (description: string) => ({ schema: { type: 'integer' as const, minimum: 0 }, description });

/** The headers of a bearer operation's answers once the account's limit was checked (IETF httpapi RateLimit headers). */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': integerHeader("Requests per second this account may send (its own limit, or the deployment's)"),
  'RateLimit-Remaining': integerHeader("Left of this second's requests; at 0, requests draw on the per-minute burst allowance"),
  'RateLimit-Reset': integerHeader("Seconds until this second's requests are available again"),
  'RateLimit-Policy': {
    schema: { type: 'string' as const },
    description: '`<rps>;w=1, <burst>;w=60`: the per-second limit and the burst allowance per minute',
  },
};

/**
 * Every operation with a bearer token counts against its account's request
 * limit: all its answers but the 401 (no account yet) carry RATE_LIMIT_HEADERS
 * (unless Redis could not be asked), and it can answer 429.
 */
function addRequestLimits(operation: NonNullable<NonNullable<OpenApiDocument['paths']>[string]['get']>): void {
  const responses = operation.responses as Record<string, { headers?: Record<string, unknown> }>;
  for (const [status, response] of Object.entries(responses)) {
    // A copy: generated response objects may be shared between operations.
    if (status !== '401') responses[status] = { ...response, headers: { ...response.headers, ...RATE_LIMIT_HEADERS } };
  }
  // An operation's own 429 (the bulk upload's limit of uploads in progress) keeps its description beside this one.
  const own = (responses['429'] as { description?: string } | undefined)?.description;
  const overLimit =
    'The account is over its request limit (`RateLimit-Policy`: requests per second, and a burst allowance per minute on top). Retry after `Retry-After` seconds.';
  responses['429'] = {
    description: own ? `${overLimit} Or: ${own}` : overLimit,
    headers: {
      'Retry-After': integerHeader('Seconds to wait before the next request'),
      ...RATE_LIMIT_HEADERS,
    },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/MessageError' } } },
  } as never;
}

/** Whether the operation has an id in its path (`{..._id}`), which the routers refuse over 255 characters (400). */
const hasPathId = (operation: { parameters?: unknown[] }) =>
  (operation.parameters ?? []).some((parameter) => {
    const { in: where, name } = parameter as { in?: string; name?: string };
    return where === 'path' && name?.endsWith('_id');
  });

function completeOperations(document: OpenApiDocument): OpenApiDocument {
  // The generated form of ERROR_RESPONSES.methodNotAllowed (the generator only converts registered paths).
  const { description, headers } = ERROR_RESPONSES.methodNotAllowed.response;
  const methodNotAllowed = {
    405: {
      description,
      headers: { Allow: { schema: { type: 'string' as const }, description: headers.Allow.description } },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/MessageError' } } },
    },
  };
  const badRequest = {
    description: ERROR_RESPONSES.badRequest.response.description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/BadRequestError' } } },
  };
  for (const item of Object.values(document.paths ?? {})) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item?.[method];
      if (!operation) continue;
      if (hasPathId(operation) && !operation.responses?.['400']) operation.responses = { ...operation.responses, 400: badRequest };
      // Before the 405, which is answered before a route (and its limit) is reached.
      if ((operation.security ?? []).some((requirement) => 'bearerAuth' in requirement)) addRequestLimits(operation);
      // An operation that answers its wrong methods in a shape of its own (the token endpoint) documents its 405 itself.
      operation.responses = { ...operation.responses, ...(operation.responses?.['405'] ? {} : methodNotAllowed) };
      if (!operation.description) {
        const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
        const notes = schemes.map((scheme) => SECURITY_NOTES[scheme]).filter(Boolean);
        operation.description = [`${operation.summary ?? ''}.`, ...(notes.length ? notes : ['Needs no credentials.'])].join(' ');
      }
    }
  }
  return document;
}

export function buildOpenApiDocument(): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registerSecuritySchemes(registry);
  for (const registrar of registrars.values()) registrar(registry);
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    servers: [{ url: '/', description: 'This service: v1, v2, the token endpoint and admin share one host' }],
    info: {
      title: 'Commerce data synchronisation service',
      version: '1.0.0',
      description:
        'Web shops push catalogue and customer data; marketing tools read it back. A 200 on a write means the record is durable; stubs, links, cascades and audit entries follow from the queue (GET /admin/api/sync-status shows when it has drained).\n\n' +
        "Limits: every v1 and v2 request counts against its account's request limit (`RateLimit-*` headers on every answer, 429 with `Retry-After` over it); a JSON body is at most 1 MiB (413), valid UTF-8 and nested at most 32 levels of arrays and objects (400); a list in a body at most 100,000 items and `custom_attributes` at most 1,000 (400, see `maxItems`); a page at most 250 items (`per_page`); a bulk line at most 1 MiB, with the same rules; repeated failed sign-ins at the token endpoint and /admin are answered 429 for a short while.",
    },
    tags: [
      { name: 'oauth', description: 'OAuth 2.0 client credentials' },
      { name: 'v1', description: 'v1: upserts and deletes of every record kind' },
      {
        name: 'v2',
        description:
          'v2: PUT upserts (a one-key body on the collection, e.g. PUT /api/v2/languages/nl/products with {"product":{...}}), GET lists and records, DELETE, link and line writers, bulk files of v2 requests',
      },
      { name: 'admin', description: 'Operators: HTTP Basic with ADMIN_USER / ADMIN_PASSWORD' },
      { name: 'operations', description: 'Probes, metrics and this description' },
    ],
  });
  return completeOperations(document);
}
