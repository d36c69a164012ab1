import { z } from 'zod';
import { parseEnvelope } from '../../catalogue/envelope.schema.js';
import { languageWriteValidators } from '../../catalogue/language.schema.js';
import { KINDS, RECORD_KINDS } from '../../catalogue/record-kinds.js';
import { parseOrThrow } from '../../catalogue/validation.js';
import { deleteLanguage, saveLanguage } from '../../records/language.service.js';
import { lookupProfile, removeRecord, saveRecord } from '../../records/record.service.js';
import { type AppContext, principalOf } from '../context.js';
import { refuseLongPathIds } from '../middleware/path-ids.middleware.js';
import { addBulkRoutes } from './bulk.router.js';
import { type ShopDependencies, shopRouter } from './shop-router.js';

const profileQuerySchema = z
  .object({
    id: z.string().min(1).max(255).optional(),
    email: z.string().min(1).max(320).optional(),
  })
  .strict();

export function v1Router(deps: ShopDependencies) {
  const { db, copyPool, notifier, reads, uploads } = deps;
  const { router, body, writing: context } = shopRouter('/api/v1', deps);

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
