import type { Next } from 'koa';
import { isRefusal, type SignInGuard } from '../../auth/sign-in.guard.js';
import { constantTimeEqual } from '../../platform/crypto.js';
import { AdminSignInBlockedError, AdminUnauthorizedError, AdminUnavailableError } from '../../platform/errors.js';
import { connectionSignedIn } from '../connection-guard.js';
import type { AppContext } from '../context.js';

/**
 * HTTP Basic with ADMIN_USER / ADMIN_PASSWORD, compared in constant time; OAuth tokens never open /admin.
 * With a sign-in guard, wrong credentials are counted (a request without any is not: that is how a browser
 * asks for the prompt) and too many of them are refused with 429 before the credentials are compared.
 */
export function adminAuthMiddleware(user: string, password: string | undefined, guard?: SignInGuard) {
  return async (ctx: AppContext, next: Next) => {
    if (!password) throw new AdminUnavailableError();
    const header = ctx.get('authorization');
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const separator = decoded.indexOf(':');
    const givenUser = separator >= 0 ? decoded.slice(0, separator) : '';
    const givenPassword = separator >= 0 ? decoded.slice(separator + 1) : '';
    const attempt = guard && header !== '' ? await guard.attempt(givenUser, ctx.ip) : null;
    if (attempt && isRefusal(attempt)) throw new AdminSignInBlockedError(attempt.waitS, attempt.reason);
    // Both comparisons always run, so timing does not tell which part was wrong.
    const userOk = constantTimeEqual(givenUser, user);
    const passwordOk = constantTimeEqual(givenPassword, password);
    if (!(userOk && passwordOk)) {
      await attempt?.failed();
      throw new AdminUnauthorizedError();
    }
    await attempt?.succeeded();
    connectionSignedIn(ctx.req.socket);
    ctx.state.adminUser = givenUser;
    return next();
  };
}

// Case-insensitive because @koa/router matches paths case-insensitively: /ADMIN/api/... reaches the admin routes.
const ADMIN_AREA = /^\/admin(?:\/|$)/i;

/**
 * Guards the whole /admin area at the app level, before any router or the
 * queue dashboard (which is a mounted Koa app, not a router) sees the request,
 * so an unknown /admin path is a 401 too rather than a hint of what exists.
 */
export function adminAreaMiddleware(user: string, password: string | undefined, guard: SignInGuard | undefined) {
  const authenticate = adminAuthMiddleware(user, password, guard);
  return (ctx: AppContext, next: Next) => (ADMIN_AREA.test(ctx.path) ? authenticate(ctx, next) : next());
}

/** The admin user of a request the guard let through (for audit entries and logs). */
export function adminUserOf(ctx: AppContext): string {
  const user = ctx.state.adminUser;
  if (user === undefined) throw new Error('route is missing the admin guard');
  return user;
}
