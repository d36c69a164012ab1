import type { Next } from 'koa';
import { constantTimeEqual } from '../../shared/crypto.js';
import { AdminUnauthorizedError, AdminUnavailableError } from '../../shared/errors.js';
import type { AppContext } from '../context.js';

/** HTTP Basic with ADMIN_USER / ADMIN_PASSWORD, compared in constant time; OAuth tokens never open /admin. */
export function adminAuthMiddleware(user: string, password: string | undefined) {
  return async (ctx: AppContext, next: Next) => {
    if (!password) throw new AdminUnavailableError();
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(ctx.get('authorization'));
    const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const separator = decoded.indexOf(':');
    const givenUser = separator >= 0 ? decoded.slice(0, separator) : '';
    const givenPassword = separator >= 0 ? decoded.slice(separator + 1) : '';
    // Both comparisons always run, so timing does not tell which part was wrong.
    const userOk = constantTimeEqual(givenUser, user);
    const passwordOk = constantTimeEqual(givenPassword, password);
    if (!(userOk && passwordOk)) throw new AdminUnauthorizedError();
    return next();
  };
}
