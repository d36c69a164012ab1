import type { RouterContext } from '@koa/router';
import type { DefaultState } from 'koa';
import type { Logger } from 'pino';
import type { Principal } from '../auth/token-verifier.js';

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
