import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { ERROR_RESPONSES, json, oauthErrorSchema, SECURITY, serverErrorSchema } from './components.js';
import { z } from './zod-openapi.js';

/*
 * The token endpoint reads its parameters by hand (RFC 6749 rules, OAuth error
 * bodies), so these schemas describe it rather than validate it; test/openapi
 * checks real answers against them.
 */
export const tokenRequestSchema = z
  .object({
    grant_type: z.literal('client_credentials'),
    client_id: z.string().optional().openapi({ description: 'With client_secret_post; or send HTTP Basic instead' }),
    client_secret: z.string().optional().openapi({ description: 'With client_secret_post; never together with HTTP Basic' }),
  })
  .openapi('TokenRequest');

export const tokenResponseSchema = z
  .object({
    access_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().openapi({ description: 'Seconds (TOKEN_TTL_SECONDS, at most 7200)' }),
    created_at: z.number().int().openapi({ description: 'Epoch seconds' }),
  })
  .openapi('TokenResponse');

const noStore = {
  'Cache-Control': { schema: { type: 'string' as const }, description: '`no-store`' },
  Pragma: { schema: { type: 'string' as const }, description: '`no-cache`' },
};

export function registerOAuthPaths(registry: OpenAPIRegistry): void {
  registry.registerPath({
    method: 'post',
    path: '/oauth/token',
    operationId: 'issueToken',
    summary: 'Issue an access token (client credentials grant)',
    tags: ['oauth'],
    security: SECURITY.client,
    request: {
      body: {
        required: true,
        content: {
          'application/json': { schema: tokenRequestSchema },
          'application/x-www-form-urlencoded': { schema: tokenRequestSchema },
        },
      },
    },
    responses: {
      200: { description: 'A bearer token', headers: noStore, content: json(tokenResponseSchema) },
      400: {
        description:
          '`invalid_request` (missing or malformed parameter or body: not JSON or form, not valid UTF-8, nested more than 32 levels) or `unsupported_grant_type`',
        headers: noStore,
        content: json(oauthErrorSchema),
      },
      401: {
        description: '`invalid_client`: unknown client, wrong secret or revoked client',
        headers: { ...noStore, 'WWW-Authenticate': { schema: { type: 'string' }, description: 'Only when HTTP Basic was used' } },
        content: json(oauthErrorSchema),
      },
      405: {
        description: '`invalid_request`: any method but POST',
        headers: { ...noStore, Allow: { schema: { type: 'string' }, description: '`POST`' } },
        content: json(oauthErrorSchema),
      },
      408: {
        description:
          '`invalid_request`: the body did not arrive within `BODY_TIMEOUT_MS` (10 s); no token was issued and the connection is closed',
        headers: { ...noStore, Connection: { schema: { type: 'string' }, description: '`close`' } },
        content: json(oauthErrorSchema),
      },
      413: { description: '`invalid_request`: the body is larger than 1 MiB', headers: noStore, content: json(oauthErrorSchema) },
      429: {
        description:
          '`slow_down`: too many failed attempts for this client id or from this address lately (AUTH_FAILURE_LIMIT, AUTH_ADDRESS_FAILURE_LIMIT per AUTH_FAILURE_WINDOW_S), or as many attempts in progress at once, and the credentials were not looked at; or this client has been issued TOKEN_ISSUE_LIMIT tokens within TOKEN_ISSUE_WINDOW_S (60 per 60 s) and should reuse the one it has. Retry after `Retry-After` seconds.',
        headers: { ...noStore, 'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds to wait' } },
        content: json(oauthErrorSchema),
      },
      500: { description: 'Unexpected failure', content: json(serverErrorSchema) },
      503: ERROR_RESPONSES.unavailable.response,
    },
  });
}
