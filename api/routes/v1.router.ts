import Router from '@koa/router';
import type { Database } from '../../shared/db.js';
import { deleteLanguage, saveLanguage } from '../../shared/language.service.js';
import { parseEnvelope } from '../../shared/schemas/envelope.js';
import { languageWriteSchema } from '../../shared/schemas/language.schema.js';
import type { TokenVerifier } from '../../shared/auth.service.js';
import { principalOf, type AppContext, type AppState } from '../context.js';
import { bearerMiddleware } from '../middleware/bearer.middleware.js';
import { bodyMiddleware } from '../middleware/body.middleware.js';

export interface V1Dependencies {
  db: Database;
  verifier: TokenVerifier;
}

export function v1Router({ db, verifier }: V1Dependencies) {
  const router = new Router<AppState>({ prefix: '/api/v1' });
  router.use(bearerMiddleware(verifier));
  const body = bodyMiddleware();

  router.post(['/languages', '/languages/'], body, async (ctx: AppContext) => {
    const input = parseEnvelope('language', ctx.request.body, languageWriteSchema);
    const language = await saveLanguage(db, principalOf(ctx).accountId, input);
    ctx.body = { language, message: 'Language successfully saved' };
  });

  router.delete('/languages/:language_id', async (ctx: AppContext) => {
    const language = await deleteLanguage(db, principalOf(ctx).accountId, ctx.params['language_id']!);
    ctx.body = { language, message: 'Language successfully deleted' };
  });

  return router;
}
