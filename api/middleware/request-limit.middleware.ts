import type { Next } from 'koa';
import type { RequestLimiter } from '../../auth/request-limiter.js';
import { HttpStatusError } from '../../platform/errors.js';
import { type AppContext, principalOf } from '../context.js';

/**
 * Per-account request limits on a bearer-protected router (after the bearer
 * middleware: the account comes with the token). Every answer carries the
 * `RateLimit-*` headers (IETF httpapi draft), errors included; over the limit
 * the request is refused with 429 and `Retry-After`. When Redis cannot be
 * asked the request goes on without headers (the limiter counts it).
 */
export function requestLimitMiddleware(limiter: RequestLimiter | undefined) {
  if (!limiter) return (_ctx: AppContext, next: Next) => next();
  return async (ctx: AppContext, next: Next) => {
    const principal = principalOf(ctx);
    const verdict = await limiter.consume(principal.accountId, principal.limit);
    if (verdict) {
      ctx.set('RateLimit-Limit', String(verdict.limit));
      ctx.set('RateLimit-Remaining', String(verdict.remaining));
      ctx.set('RateLimit-Reset', String(verdict.resetS));
      ctx.set('RateLimit-Policy', verdict.policy);
      if (!verdict.allowed) {
        throw new HttpStatusError(
          429,
          `Too many requests: this account may send ${verdict.limit} requests per second` +
            `${verdict.burst > 0 ? ` and ${verdict.burst} more per minute` : ''}; retry after ${verdict.resetS} s`,
          { 'Retry-After': String(verdict.resetS) },
        );
      }
    }
    return next();
  };
}
