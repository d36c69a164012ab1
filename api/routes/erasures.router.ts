import type Router from '@koa/router';
import { createErasure, listErasures, requireErasure } from '../../erasures/erasure.service.js';
import type { WriteContext } from '../../records/write-context.js';
import type { AppContext, AppState } from '../context.js';
import type { bodyMiddleware } from '../middleware/body.middleware.js';

export interface ErasureRouteDependencies {
  writing: (ctx: AppContext) => WriteContext;
  body: ReturnType<typeof bodyMiddleware>;
}

/** /api/v2/erasures (interface §24): erasures of a customer in the account. */
export function addErasureRoutes(router: Router<AppState>, { writing, body }: ErasureRouteDependencies): void {
  router.post('/erasures', body, async (ctx: AppContext) => {
    ctx.status = 202;
    ctx.body = { erasure: await createErasure(writing(ctx), ctx.request.body) };
  });
  router.get('/erasures', async (ctx: AppContext) => {
    ctx.body = await listErasures(writing(ctx), { ...ctx.query });
  });
  router.get('/erasures/:erasure_id', async (ctx: AppContext) => {
    ctx.body = { erasure: await requireErasure(writing(ctx), ctx.params['erasure_id']!) };
  });
}
