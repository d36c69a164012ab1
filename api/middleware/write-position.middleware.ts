import type { Next } from 'koa';
import type { WritePositions } from '../../sync/write-positions.js';
import type { AppContext } from '../context.js';

/** Methods that write nothing. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * With read replicas: after any request that may have written for its
 * account (every method but GET, HEAD and OPTIONS, whatever its outcome: a
 * failed bulk upload may have committed part), the account's write position
 * is raised before the answer leaves, so the client's next read, from any API
 * process, finds a replica that has its write or goes to the primary
 * (sync/write-positions.ts). Every write the API commits for an account
 * (single writes, deletes, links, lines, bulk files, erasures, languages)
 * has committed by the time its handler returns.
 */
export function writePositionMiddleware(positions: WritePositions) {
  return async (ctx: AppContext, next: Next) => {
    try {
      await next();
    } finally {
      const principal = ctx.state.principal;
      if (principal && !READ_METHODS.has(ctx.method)) await positions.wrote(principal.accountId);
    }
  };
}
