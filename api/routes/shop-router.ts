import Router from '@koa/router';
import type pg from 'pg';
import type { RequestLimiter } from '../../auth/request-limiter.js';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { UploadLimits } from '../../bulk/bulk.service.js';
import type { Database } from '../../platform/db.js';
import type { ReadRouter } from '../../reads/read-router.js';
import type { LiveLanguages } from '../../records/live-languages.js';
import type { WriteContext } from '../../records/write-context.js';
import type { OutboxNotifier } from '../../sync/outbox.notifier.js';
import type { PreparedWriter } from '../../sync/prepared-write.js';
import type { WritePositions } from '../../sync/write-positions.js';
import { type AppContext, type AppState, writeContextOf } from '../context.js';
import { bearerMiddleware } from '../middleware/bearer.middleware.js';
import { bodyMiddleware } from '../middleware/body.middleware.js';
import { requestLimitMiddleware } from '../middleware/request-limit.middleware.js';
import { writePositionMiddleware } from '../middleware/write-position.middleware.js';

/** What a shop-facing router (v1, v2) is built from. */
export interface ShopDependencies {
  db: Database;
  copyPool: pg.Pool;
  verifier: TokenVerifier;
  notifier: OutboxNotifier;
  writer: PreparedWriter;
  languages: LiveLanguages;
  /** Where reads run: the primary, or a replica that has the account's writes (reads/read-router.ts). */
  reads: ReadRouter;
  /** Where accounts' last writes are kept, with read replicas only (sync/write-positions.ts). */
  positions: WritePositions | undefined;
  /** Per-account request limits; undefined when RATE_LIMIT_ENABLED is false. */
  limiter: RequestLimiter | undefined;
  uploads: UploadLimits;
  /** BODY_TIMEOUT_MS: how long a write's body may take to arrive. */
  bodyTimeoutMs: number;
}

/**
 * The start v1 and v2 share: a router under `prefix` that authenticates the
 * bearer, counts the account's request limit and, with read replicas, raises
 * its write position after a write; the body reader; each request's write context.
 */
export function shopRouter(prefix: string, deps: ShopDependencies) {
  const router = new Router<AppState>({ prefix });
  router.use(bearerMiddleware(deps.verifier), requestLimitMiddleware(deps.limiter));
  if (deps.positions) router.use(writePositionMiddleware(deps.positions));
  const services = { db: deps.db, languages: deps.languages, writer: deps.writer, notifier: deps.notifier };
  return {
    router,
    body: bodyMiddleware({ timeoutMs: deps.bodyTimeoutMs }),
    writing: (ctx: AppContext): WriteContext => writeContextOf(services, ctx),
  };
}
