import Router from '@koa/router';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import { KINDS, RECORD_KINDS } from '../../catalogue/record-kinds.js';
import type { Database } from '../../platform/db.js';
import {
  getLanguage,
  getRecord,
  listCategoryProducts,
  listLanguages,
  listProductCategories,
  listProductVariants,
  listRecords,
  presentSaved,
  type ReadContext,
} from '../../reads/read.service.js';
import { changeAssignment, removeRecord, saveRecord, type WriteContext } from '../../records/record.service.js';
import type { OutboxNotifier } from '../../sync/outbox.notifier.js';
import { type AppContext, type AppState, principalOf } from '../context.js';
import { bearerMiddleware } from '../middleware/bearer.middleware.js';
import { bodyMiddleware } from '../middleware/body.middleware.js';
import { registerV2Paths } from '../openapi/v2.openapi.js';
import { registerOpenApi } from '../openapi.js';

export interface V2Dependencies {
  db: Database;
  verifier: TokenVerifier;
  notifier: OutboxNotifier;
}

registerOpenApi('v2', registerV2Paths);

/** The v2 kinds with PUT upsert and DELETE (SPEC v2 table). */
const WRITABLE = ['product', 'category'] as const;

/**
 * /api/v2 (SPEC v2 table, CONTRACT 8): PUT upserts returning the bare record,
 * 204 deletes and assignments, paginated lists and sub-lists, and read-back of
 * every record kind and of the account's languages.
 */
export function v2Router({ db, verifier, notifier }: V2Dependencies) {
  const router = new Router<AppState>({ prefix: '/api/v2' });
  router.use(bearerMiddleware(verifier));
  const body = bodyMiddleware();
  const writing = (ctx: AppContext): WriteContext => {
    const principal = principalOf(ctx);
    return { db, notifier, accountId: principal.accountId, clientId: principal.clientId, requestId: ctx.state.requestId };
  };
  const reading = (ctx: AppContext): ReadContext => ({ db, accountId: principalOf(ctx).accountId });
  const param = (ctx: AppContext, name: string) => ctx.params[name]!;
  const query = (ctx: AppContext) => ({ ...ctx.query }) as Record<string, unknown>;
  /** Lists arrive serialised (their JSON is built by the database). */
  const sendList = (ctx: AppContext, json: string) => {
    ctx.type = 'application/json';
    ctx.body = json;
  };

  router.get('/languages', async (ctx: AppContext) => {
    sendList(ctx, await listLanguages(reading(ctx), query(ctx)));
  });

  router.get('/languages/:language_id', async (ctx: AppContext) => {
    ctx.body = await getLanguage(reading(ctx), param(ctx, 'language_id'));
  });

  for (const kind of WRITABLE) {
    const { segment } = KINDS[kind];
    router.put(`/languages/:language_id/${segment}`, body, async (ctx: AppContext) => {
      const languageId = param(ctx, 'language_id');
      const saved = await saveRecord(writing(ctx), languageId, kind, ctx.request.body, 'v2');
      ctx.body = await presentSaved(reading(ctx), languageId, kind, saved);
    });
    router.delete(`/languages/:language_id/${segment}/:record_id`, async (ctx: AppContext) => {
      await removeRecord(writing(ctx), param(ctx, 'language_id'), kind, param(ctx, 'record_id'));
      ctx.status = 204;
    });
  }

  router.get('/languages/:language_id/products/:product_id/variants', async (ctx: AppContext) => {
    sendList(ctx, await listProductVariants(reading(ctx), param(ctx, 'language_id'), param(ctx, 'product_id'), query(ctx)));
  });

  router.get('/languages/:language_id/products/:product_id/categories', async (ctx: AppContext) => {
    sendList(ctx, await listProductCategories(reading(ctx), param(ctx, 'language_id'), param(ctx, 'product_id'), query(ctx)));
  });

  router.get('/languages/:language_id/categories/:category_id/products', async (ctx: AppContext) => {
    sendList(ctx, await listCategoryProducts(reading(ctx), param(ctx, 'language_id'), param(ctx, 'category_id'), query(ctx)));
  });

  const assignment = '/languages/:language_id/products/:product_id/categories/:category_id';
  for (const [method, action] of [
    ['put', 'assign'],
    ['delete', 'unassign'],
  ] as const) {
    router[method](assignment, async (ctx: AppContext) => {
      await changeAssignment(writing(ctx), param(ctx, 'language_id'), param(ctx, 'product_id'), param(ctx, 'category_id'), action);
      ctx.status = 204;
    });
  }

  for (const kind of RECORD_KINDS) {
    const { segment } = KINDS[kind];
    router.get(`/languages/:language_id/${segment}`, async (ctx: AppContext) => {
      sendList(ctx, await listRecords(reading(ctx), param(ctx, 'language_id'), kind, query(ctx)));
    });
    router.get(`/languages/:language_id/${segment}/:record_id`, async (ctx: AppContext) => {
      ctx.body = await getRecord(reading(ctx), param(ctx, 'language_id'), kind, param(ctx, 'record_id'));
    });
  }

  return router;
}
