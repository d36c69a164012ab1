import type { RouterContext } from '@koa/router';
import type { DefaultState } from 'koa';
import type { Logger } from 'pino';
import type { Principal } from '../auth/token-verifier.js';
import type { WriteContext, WriteServices } from '../records/write-context.js';

export interface AppState extends DefaultState {
  requestId: string;
  logger: Logger;
  principal?: Principal;
  /** The admin user, once the admin guard has let the request through. */
  adminUser?: string;
  routePath?: string;
}

export type AppContext = RouterContext<AppState>;

export function principalOf(ctx: AppContext): Principal {
  const principal = ctx.state.principal;
  if (!principal) throw new Error('route is missing the bearer middleware');
  return principal;
}

/** A request's write context: the process's write services, with the request's account, client and id. */
export function writeContextOf(services: WriteServices, ctx: AppContext): WriteContext {
  const principal = principalOf(ctx);
  return { ...services, accountId: principal.accountId, clientId: principal.clientId, requestId: ctx.state.requestId };
}
