import Router from '@koa/router';
import type pg from 'pg';
import { z } from 'zod';
import type { RequestLimiter } from '../../auth/request-limiter.js';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { UploadLimits } from '../../bulk/bulk.service.js';
import { parseEnvelope } from '../../catalogue/envelope.schema.js';
import { languageWriteValidators } from '../../catalogue/language.schema.js';
import { KINDS, RECORD_KINDS } from '../../catalogue/record-kinds.js';
import { parseOrThrow } from '../../catalogue/validation.js';
import type { Database } from '../../platform/db.js';
import type { ReadRouter } from '../../reads/read-router.js';
import { deleteLanguage, saveLanguage } from '../../records/language.service.js';
import type { LiveLanguages } from '../../records/live-languages.js';
import { lookupProfile, removeRecord, saveRecord } from '../../records/record.service.js';
import type { WriteContext } from '../../records/write-context.js';
import type { OutboxNotifier } from '../../sync/outbox.notifier.js';
import type { PreparedWriter } from '../../sync/prepared-write.js';
import type { WritePositions } from '../../sync/write-positions.js';
import { type AppContext, type AppState, principalOf, writeContextOf } from '../context.js';
import { bearerMiddleware } from '../middleware/bearer.middleware.js';
import { bodyMiddleware } from '../middleware/body.middleware.js';
import { refuseLongPathIds } from '../middleware/path-ids.middleware.js';
import { requestLimitMiddleware } from '../middleware/request-limit.middleware.js';
import { writePositionMiddleware } from '../middleware/write-position.middleware.js';
import { addBulkRoutes } from './bulk.router.js';

export interface V1Dependencies {
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

const profileQuerySchema = z
  .object({
    id: z.string().min(1).max(255).optional(),
    email: z.string().min(1).max(320).optional(),
  })
  .strict();

export function v1Router({
  db,
  copyPool,
  verifier,
  notifier,
  writer,
  languages,
  reads,
  positions,
  limiter,
  uploads,
  bodyTimeoutMs,
}: V1Dependencies) {
  const router = new Router<AppState>({ prefix: '/api/v1' });
  router.use(bearerMiddleware(verifier), requestLimitMiddleware(limiter));
  if (positions) router.use(writePositionMiddleware(positions));
  const body = bodyMiddleware({ timeoutMs: bodyTimeoutMs });
  const writeServices = { db, languages, writer, notifier };
  const context = (ctx: AppContext): WriteContext => writeContextOf(writeServices, ctx);

  router.post(['/languages', '/languages/'], body, async (ctx: AppContext) => {
    const input = parseEnvelope('language', ctx.request.body, languageWriteValidators.v1);
    const language = await saveLanguage(context(ctx), input);
    ctx.body = { language, message: 'Language successfully saved' };
  });

  router.delete('/languages/:language_id', async (ctx: AppContext) => {
    const languageId = ctx.params['language_id']!;
    const language = (await deleteLanguage(context(ctx), languageId)) ?? { id: languageId };
    ctx.body = { language, message: 'Language successfully deleted' };
  });

  router.get('/languages/:language_id/profiles', async (ctx: AppContext) => {
    const query = parseOrThrow(profileQuerySchema, { ...ctx.query });
    const accountId = principalOf(ctx).accountId;
    const profile = await reads.read(accountId, (target) => lookupProfile(target.db, accountId, ctx.params['language_id']!, query));
    ctx.body = { profile };
  });

  addBulkRoutes(router, { db, copyPool, notifier, uploads }, 'v1');

  for (const kind of RECORD_KINDS) {
    const { segment, resource } = KINDS[kind];
    router.post(`/languages/:language_id/${segment}`, body, async (ctx: AppContext) => {
      const record = await saveRecord(context(ctx), ctx.params['language_id']!, kind, ctx.request.body);
      ctx.body = { [kind]: record, message: `${resource} successfully saved` };
    });
    router.delete(`/languages/:language_id/${segment}/:record_id`, async (ctx: AppContext) => {
      const record = await removeRecord(context(ctx), ctx.params['language_id']!, kind, ctx.params['record_id']!);
      ctx.body = { [kind]: record, message: `${resource} successfully deleted` };
    });
  }

  refuseLongPathIds(router);
  return router;
}
