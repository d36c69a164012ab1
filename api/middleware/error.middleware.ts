import type { Next } from 'koa';
import { isDatabaseUnavailable } from '../../platform/db.js';
import { AppError, GENERIC_500_BODY, HttpStatusError, RouteNotFoundError } from '../../platform/errors.js';
import type { AppContext } from '../context.js';

/** Seconds a client is asked to wait when Postgres is unreachable (a restart takes a few). */
const DATABASE_RETRY_AFTER_S = 5;

/** Statuses that Koa and its routers raise as HttpErrors and that map to a plain body of interface §11. */
function fromHttpError(error: { status?: number; headers?: Record<string, string>; message: string }): AppError | null {
  switch (error.status) {
    case 404:
      return new RouteNotFoundError();
    case 405:
      return new HttpStatusError(405, methodNotAllowed(error.headers?.['Allow'] ?? error.headers?.['allow']), error.headers);
    case 501:
      return unknownMethod(error.headers?.['Allow'] ?? error.headers?.['allow']);
    case 413:
      return new HttpStatusError(413, 'Request body is larger than 1 MiB');
    case 415:
      return new HttpStatusError(415, 'Unsupported content type');
    default:
      return null;
  }
}

/**
 * A method no route has (PROPFIND, MKCOL, ...), which the router answers 501:
 * on a known path it is a wrong method like any other, 405 with `Allow`
 * (interface §11); on an unknown path, 404.
 */
function unknownMethod(allow: string | undefined): AppError {
  if (!allow?.trim()) return new RouteNotFoundError();
  return new HttpStatusError(405, methodNotAllowed(allow), { Allow: allow });
}

/** A 405 message that names the allowed methods, as `Allow` does (a reader of the body alone knows what to use). */
export function methodNotAllowed(allow: string | undefined): string {
  const methods = (allow ?? '')
    .split(',')
    .map((method) => method.trim())
    .filter((method) => method !== '' && method !== 'HEAD' && method !== 'OPTIONS');
  return methods.length === 0 ? 'Method not allowed' : `Method not allowed: this path allows ${methods.join(', ')}`;
}

/**
 * Maps every error to its body (interface §11). AppErrors carry their own status and
 * body; an unreachable database is a 503 with Retry-After; anything unexpected
 * is logged with the request id and answered with the generic 500. Both carry
 * interface §11.2's generic message, never a stack trace or SQL.
 */
export async function errorMiddleware(ctx: AppContext, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.body === undefined || ctx.body === null) {
      // Routers answer 404/405/501 by status alone; give those the bodies of interface §11 (Allow stays set).
      if (ctx.status === 404) throw new RouteNotFoundError();
      if (ctx.status === 405) ctx.body = { error: { message: methodNotAllowed(ctx.response.get('Allow')) } };
      if (ctx.status === 501) {
        const allow = ctx.response.get('Allow');
        ctx.remove('Allow');
        throw unknownMethod(allow);
      }
    }
  } catch (caught) {
    const error = caught as Error & { status?: number; expose?: boolean; headers?: Record<string, string> };
    const appError = error instanceof AppError ? error : fromHttpError(error);
    if (appError) {
      ctx.status = appError.status;
      ctx.set(appError.headers);
      ctx.body = appError.body();
      if (appError.setupState) ctx.state.logger.info({ status: appError.status, reason: appError.message }, 'request refused');
      else if (appError.status >= 500) ctx.state.logger.error({ err: error }, 'request failed');
      return;
    }
    if (isDatabaseUnavailable(error)) {
      // Not the client's mistake and not for good: the same request may succeed once Postgres is back.
      ctx.state.logger.warn({ err: error }, 'database unavailable');
      ctx.status = 503;
      ctx.set('Retry-After', String(DATABASE_RETRY_AFTER_S));
      ctx.body = GENERIC_500_BODY;
      return;
    }
    ctx.state.logger.error({ err: error }, 'unexpected error');
    ctx.status = 500;
    ctx.body = GENERIC_500_BODY;
  }
}
