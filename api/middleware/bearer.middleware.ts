import type { Next } from 'koa';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import { UnauthorizedError } from '../../platform/errors.js';
import { connectionSignedIn } from '../connection-guard.js';
import type { AppContext } from '../context.js';

/** Guards /api/v1 and /api/v2: a live bearer token sets `ctx.state.principal`. */
export function bearerMiddleware(verifier: TokenVerifier) {
  return async (ctx: AppContext, next: Next) => {
    const header = ctx.get('authorization');
    const match = /^Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
    if (!match?.[1]) throw new UnauthorizedError();
    const principal = await verifier.verify(match[1]);
    if (!principal) throw new UnauthorizedError();
    ctx.state.principal = principal;
    connectionSignedIn(ctx.req.socket);
    return next();
  };
}
