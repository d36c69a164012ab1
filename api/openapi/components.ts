import type { OpenAPIRegistry, ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ZodTypeAny } from 'zod';
import { MAX_ID_LENGTH } from '../../catalogue/primitives.schema.js';
import { GENERIC_500_BODY } from '../../platform/errors.js';
import { z } from './zod-openapi.js';

/*
 * Building blocks shared by every interface's OpenAPI paths: the error bodies
 * of interface §3, §4, §9 and §11 and the security schemes. An interface (v1, v2,
 * admin, ...) describes its operations with these so that one error looks the
 * same everywhere in the document.
 */

const parameterList = (description: string) => z.array(z.string()).min(1).openapi({ description });

export const messageErrorSchema = z
  .object({ error: z.object({ message: z.string() }) })
  .openapi('MessageError', { description: 'An error with a message, e.g. malformed JSON, an unknown language, 413, 415' });

export const missingParametersErrorSchema = z
  .object({
    error: z.object({
      message: z.string(),
      missing_parameters: parameterList('Paths of the required fields that are missing, e.g. `name`, `products[0].id`'),
    }),
  })
  .openapi('MissingParametersError');

export const unknownParametersErrorSchema = z
  .object({
    error: z.object({ message: z.string(), unknown_parameters: parameterList('Paths of the fields that are not part of the record') }),
  })
  .openapi('UnknownParametersError');

export const invalidParametersErrorSchema = z
  .object({
    error: z.object({ message: z.string(), invalid_parameters: parameterList('Paths of the fields with a wrong type or format') }),
  })
  .openapi('InvalidParametersError');

export const plainErrorSchema = z
  .object({ error: z.string() })
  .openapi('PlainError', { description: 'An error as a bare message, e.g. a record not found or a missing token' });

export const serverErrorSchema = z
  .object({ error: z.literal(GENERIC_500_BODY.error) })
  .openapi('ServerError', { description: 'Never carries a stack trace, SQL or a secret' });

export const oauthErrorSchema = z
  .object({
    error: z.enum(['invalid_request', 'invalid_client', 'unsupported_grant_type', 'slow_down', 'server_error']),
    error_description: z.string(),
  })
  .openapi('OAuthError', { description: 'RFC 6749 5.2 error response' });

/** Every 400 body a validated request can get: a class of parameter problem, or a plain message (malformed JSON). */
export const badRequestSchema = z
  .union([missingParametersErrorSchema, unknownParametersErrorSchema, invalidParametersErrorSchema, messageErrorSchema])
  .openapi('BadRequestError');

export const json = (schema: ZodTypeAny) => ({ 'application/json': { schema } });

const header = (description: string) => ({ schema: { type: 'string' as const }, description });

/** Error responses by name; an operation lists the ones it can answer with `errors(...)`. */
export const ERROR_RESPONSES = {
  badRequest: {
    status: 400,
    response: { description: 'Missing, unknown or invalid parameters, or a malformed body', content: json(badRequestSchema) },
  },
  unauthorized: {
    status: 401,
    response: {
      description: 'Missing, unknown, expired or revoked bearer token',
      headers: { 'WWW-Authenticate': header('`Bearer realm="api", error="invalid_token"`') },
      content: json(plainErrorSchema),
    },
  },
  languageNotFound: {
    status: 404,
    response: { description: 'The language does not exist for this account', content: json(messageErrorSchema) },
  },
  recordNotFound: {
    status: 404,
    response: { description: 'The record does not exist, e.g. `{"error":"Product not found"}`', content: json(plainErrorSchema) },
  },
  notFound: {
    status: 404,
    response: {
      description: 'The language (`{"error":{"message":...}}`) or the record (`{"error":"... not found"}`) does not exist',
      content: json(z.union([messageErrorSchema, plainErrorSchema])),
    },
  },
  tooLarge: { status: 413, response: { description: 'The body is larger than 1 MiB', content: json(messageErrorSchema) } },
  bodyTimeout: {
    status: 408,
    response: {
      description:
        'The body did not arrive within `BODY_TIMEOUT_MS` (10 s) of the service starting to read it: nothing was done, and the connection is closed',
      headers: { Connection: header('`close`') },
      content: json(messageErrorSchema),
    },
  },
  unsupportedMediaType: { status: 415, response: { description: 'The body is not JSON', content: json(messageErrorSchema) } },
  uploadTimeout: {
    status: 408,
    response: {
      description:
        'The client sent nothing for `BULK_IDLE_TIMEOUT_MS` (30 s): the upload was cut, nothing of it is kept, and the connection is closed',
      headers: { Connection: header('`close`') },
      content: json(messageErrorSchema),
    },
  },
  bulkTooLarge: {
    status: 413,
    response: {
      description:
        'The file is larger than `BULK_MAX_BYTES` (1 GiB), counted after decoding: a gzip body is limited by what it unpacks to. Nothing of it is kept',
      content: json(messageErrorSchema),
    },
  },
  bulkUnsupportedMediaType: {
    status: 415,
    response: {
      description: 'The body is not NDJSON, or it is sent with a `Content-Encoding` other than `gzip` (or `identity`)',
      content: json(messageErrorSchema),
    },
  },
  tooManyUploads: {
    status: 429,
    response: {
      description:
        'The account already has `BULK_UPLOADS_PER_ACCOUNT` (2) uploads in progress; send the file again once one of them is answered',
      headers: {
        'Retry-After': header(
          'Seconds until a place can free: the soonest an upload in progress can give its place back (at once when it is answered; within 10 s when its API process died)',
        ),
      },
      content: json(messageErrorSchema),
    },
  },
  serverError: { status: 500, response: { description: 'Unexpected failure', content: json(serverErrorSchema) } },
  adminUnauthorized: {
    status: 401,
    response: {
      description: 'Missing or wrong admin credentials (bearer tokens never open /admin)',
      headers: { 'WWW-Authenticate': header('`Basic realm="admin", charset="UTF-8"`') },
      content: json(plainErrorSchema),
    },
  },
  adminSignInBlocked: {
    status: 429,
    response: {
      description:
        'Too many failed sign-ins for this user or from this address lately; the credentials were not looked at. Retry after `Retry-After` seconds.',
      headers: { 'Retry-After': header('Seconds to wait') },
      content: json(plainErrorSchema),
    },
  },
  methodNotAllowed: {
    status: 405,
    response: {
      description: 'The path exists, but not with this method: `Allow` and the message name the methods it has',
      headers: { Allow: header('The methods of this path, e.g. `GET, PUT`') },
      content: json(messageErrorSchema),
    },
  },
  adminDisabled: {
    status: 503,
    response: {
      description:
        'ADMIN_PASSWORD is not set: the admin interface is disabled; or Postgres cannot be reached right now (then with `Retry-After` and the generic message)',
      headers: { 'Retry-After': header('Seconds to wait, when Postgres cannot be reached') },
      content: json(plainErrorSchema),
    },
  },
  unavailable: {
    status: 503,
    response: {
      description: 'Postgres cannot be reached right now: the same request may succeed after `Retry-After` seconds',
      headers: { 'Retry-After': header('Seconds to wait before trying again') },
      content: json(serverErrorSchema),
    },
  },
} satisfies Record<string, { status: number; response: ResponseConfig }>;

export type ErrorResponseName = keyof typeof ERROR_RESPONSES;

/** The named error responses keyed by status (two names with one status must not be combined). */
export function errors(...names: ErrorResponseName[]): Record<string, ResponseConfig> {
  const out: Record<string, ResponseConfig> = {};
  for (const name of names) {
    const { status, response } = ERROR_RESPONSES[name];
    if (out[status]) throw new Error(`OpenAPI: two error responses for status ${status} (${name})`);
    out[status] = response;
  }
  // Whatever can fail unexpectedly can also find Postgres unreachable (adminDisabled says both).
  if (names.includes('serverError') && !out[503]) out[503] = ERROR_RESPONSES.unavailable.response;
  return out;
}

/** The errors every bearer-protected JSON write can answer. */
export const WRITE_ERRORS: ErrorResponseName[] = [
  'badRequest',
  'unauthorized',
  'languageNotFound',
  'tooLarge',
  'bodyTimeout',
  'unsupportedMediaType',
  'serverError',
];

type SecurityRequirement = Record<string, string[]>[];

export const SECURITY: Record<'bearer' | 'admin' | 'client', SecurityRequirement> = {
  bearer: [{ bearerAuth: [] }],
  admin: [{ adminBasic: [] }],
  // HTTP Basic (client_secret_basic) or nothing (client_secret_post puts the credentials in the body).
  client: [{ clientBasic: [] }, {}],
};

export function registerSecuritySchemes(registry: OpenAPIRegistry): void {
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'An access token from POST /oauth/token',
  });
  registry.registerComponent('securitySchemes', 'clientBasic', {
    type: 'http',
    scheme: 'basic',
    description: 'client_id:client_secret (client_secret_basic); client_secret_post sends them in the body instead',
  });
  registry.registerComponent('securitySchemes', 'adminBasic', {
    type: 'http',
    scheme: 'basic',
    description: 'ADMIN_USER:ADMIN_PASSWORD',
  });
}

/** One operation: its own answers in `responses`, the shared error answers it can give by name in `errors`. */
export interface Operation {
  method: RouteConfig['method'];
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  request?: RouteConfig['request'];
  responses: Record<number, ResponseConfig>;
  errors: ErrorResponseName[];
}

/**
 * A registrar for the operations of one interface, which all have the same
 * tags and security. An answer in `responses` stands over a named error of
 * its status.
 */
export function operationsOf(registry: OpenAPIRegistry, tags: string[], security: SecurityRequirement) {
  return ({ method, path, operationId, summary, description, request, responses, errors: names }: Operation): void => {
    registry.registerPath({
      method,
      path,
      operationId,
      summary,
      ...(description === undefined ? {} : { description }),
      tags,
      security,
      ...(request === undefined ? {} : { request }),
      responses: { ...errors(...names), ...responses },
    });
  };
}

/** `/a/:b` (a @koa/router path) as an OpenAPI path `/a/{b}`. */
export const toOpenApiPath = (routerPath: string): string => routerPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** Path parameters of an OpenAPI path, as strings with a description each; an id (`..._id`) is at most 255 characters. */
export function pathParams(descriptions: Record<string, string>) {
  return z.object(
    Object.fromEntries(
      Object.entries(descriptions).map(([name, description]) => [
        name,
        (name.endsWith('_id') ? z.string().max(MAX_ID_LENGTH) : z.string()).openapi({ description }),
      ]),
    ),
  );
}

/** A page of a list (interface §8.7): `{"data":[...],"meta":{"current_page","per_page","total"}}`. */
export const paginated = (item: ZodTypeAny) =>
  z.object({
    data: z.array(item),
    meta: z.object({ current_page: z.number().int(), per_page: z.number().int(), total: z.number().int() }),
  });

/** A 204 answer, e.g. a v2 DELETE or an assignment. */
export const NO_CONTENT: ResponseConfig = { description: 'Done; no body' };

/** A noun with its indefinite article: "an order", "a product", "a user". */
export const withArticle = (noun: string): string => (/^([aeio]|u(?!s|ni|r|u))/i.test(noun) ? `an ${noun}` : `a ${noun}`);
