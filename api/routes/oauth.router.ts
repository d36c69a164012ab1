import Router from '@koa/router';
import { authenticateClient, issueToken } from '../../auth/auth.service.js';
import type { ClientRow } from '../../auth/client.repository.js';
import { isRefusal, type SignInGuard } from '../../auth/sign-in.guard.js';
import type { TokenIssueLimiter } from '../../auth/token-issue.limiter.js';
import type { Database } from '../../platform/db.js';
import { OAuthError } from '../../platform/errors.js';
import { connectionSignedIn } from '../connection-guard.js';
import type { AppContext, AppState } from '../context.js';
import { bodyMiddleware } from '../middleware/body.middleware.js';

interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  usedBasic: boolean;
}

const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description);

function decodeComponent(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
}

function readParameter(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalidRequest(`Parameter ${name} must be a single string`);
  return value;
}

/** client_secret_basic (RFC 6749 2.3.1) or client_secret_post, never both. */
function readCredentials(ctx: AppContext, body: Record<string, unknown>): ClientCredentials {
  const header = ctx.get('authorization');
  const bodyId = readParameter(body, 'client_id');
  const bodySecret = readParameter(body, 'client_secret');
  if (header) {
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (!match?.[1]) throw invalidRequest('The Authorization header must use the Basic scheme');
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const separator = decoded.indexOf(':');
    if (separator < 1) throw invalidRequest('The Basic credentials must be client_id:client_secret');
    if (bodySecret !== undefined) throw invalidRequest('Use one client authentication method: Basic header or client_secret in the body');
    const clientId = decodeComponent(decoded.slice(0, separator));
    if (bodyId !== undefined && bodyId !== clientId) throw invalidRequest('client_id in the body does not match the Basic credentials');
    return { clientId, clientSecret: decodeComponent(decoded.slice(separator + 1)), usedBasic: true };
  }
  const missing = [bodyId === undefined && 'client_id', bodySecret === undefined && 'client_secret'].filter(Boolean);
  if (missing.length > 0) throw invalidRequest(`Missing required parameter: ${missing.join(', ')}`);
  return { clientId: bodyId!, clientSecret: bodySecret!, usedBasic: false };
}

/**
 * Client authentication under the sign-in guard: refused (429 `slow_down`,
 * RFC 8628 3.5) before the secret is looked at while the client id or the
 * address has too many recent failures (or attempts in progress); an
 * `invalid_client` is counted.
 */
async function guarded(guard: SignInGuard | undefined, clientId: string, address: string, authenticate: () => Promise<ClientRow>) {
  if (!guard) return authenticate();
  const attempt = await guard.attempt(clientId, address);
  if (isRefusal(attempt)) {
    const why = attempt.reason === 'failures' ? 'Too many failed attempts' : 'Too many attempts in progress';
    throw new OAuthError(429, 'slow_down', `${why} for this client or from this address: retry after ${attempt.waitS} s`, {
      'Retry-After': String(attempt.waitS),
    });
  }
  let client: ClientRow;
  try {
    client = await authenticate();
  } catch (error) {
    if (error instanceof OAuthError && error.code === 'invalid_client') await attempt.failed();
    else await attempt.abandoned();
    throw error;
  }
  await attempt.succeeded();
  return client;
}

/** The token endpoint's path, as the router matches it (any case, an optional trailing slash). */
export const TOKEN_PATH = /^\/oauth\/token\/?$/i;

/**
 * Any method but POST on the token endpoint, known (GET) or not (PROPFIND):
 * 405 with `Allow`, in the OAuth error shape its clients read (the router's
 * allowedMethods throws it).
 */
const methodNotAllowed = () =>
  new OAuthError(405, 'invalid_request', 'Method not allowed: the token endpoint takes POST only', { Allow: 'POST' });
export const TOKEN_METHOD_ERRORS = { throw: true, methodNotAllowed, notImplemented: methodNotAllowed } as const;

export interface OAuthDependencies {
  db: Database;
  tokenTtlSeconds: number;
  /** BODY_TIMEOUT_MS: how long a token request's body may take to arrive. */
  bodyTimeoutMs: number;
  signInGuard: SignInGuard | undefined;
  /** Tokens per client (TOKEN_ISSUE_LIMIT per TOKEN_ISSUE_WINDOW_S). */
  issueLimiter: TokenIssueLimiter;
}

export function oauthRouter({ db, tokenTtlSeconds, bodyTimeoutMs, signInGuard, issueLimiter }: OAuthDependencies) {
  const router = new Router<AppState>();
  router.post(
    '/oauth/token',
    bodyMiddleware({
      timeoutMs: bodyTimeoutMs,
      form: true,
      onError: (kind, detail) => {
        if (kind === 'too_large') return new OAuthError(413, 'invalid_request', detail);
        if (kind === 'timeout') return new OAuthError(408, 'invalid_request', detail);
        return invalidRequest(kind === 'unsupported' ? 'The body must be application/json or application/x-www-form-urlencoded' : detail);
      },
    }),
    async (ctx: AppContext) => {
      // An empty body is reported by the first parameter it lacks.
      const raw: unknown = ctx.request.body ?? {};
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidRequest('The request body must be an object');
      const body = raw as Record<string, unknown>;
      const grantType = readParameter(body, 'grant_type');
      if (grantType === undefined) throw invalidRequest('Missing required parameter: grant_type');
      if (grantType !== 'client_credentials') {
        throw new OAuthError(400, 'unsupported_grant_type', 'Only the client_credentials grant is supported');
      }
      const credentials = readCredentials(ctx, body);
      const client = await guarded(signInGuard, credentials.clientId, ctx.ip, () =>
        authenticateClient(db, credentials.clientId, credentials.clientSecret, credentials.usedBasic),
      );
      connectionSignedIn(ctx.req.socket);
      const wait = await issueLimiter.take(client.id);
      if (wait !== null) {
        const { limit, windowS } = issueLimiter.options;
        throw new OAuthError(
          429,
          'slow_down',
          `Too many tokens requested for this client: at most ${limit} every ${windowS} s. ` +
            `A token stays valid for ${tokenTtlSeconds} s: reuse it until it expires, or retry after ${wait} s`,
          { 'Retry-After': String(wait) },
        );
      }
      const token = await issueToken(db, client, tokenTtlSeconds);
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Pragma', 'no-cache');
      ctx.body = token;
    },
  );
  return router;
}
