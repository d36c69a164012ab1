import { randomUUID } from 'node:crypto';
import { parseEnvelope } from '../catalogue/envelope.schema.js';
import { parseOrThrow, Validator } from '../catalogue/validation.js';
import { RecordNotFoundError, ValidationError } from '../platform/errors.js';
import { originOf, type WriteContext } from '../records/write-context.js';
import { ERASE_ACTION, ERASURE_KIND } from '../sync/erasure.applier.js';
import { holdLanguageForWrite } from '../sync/locks.js';
import { queueChange } from '../sync/write.repository.js';
import { findErasure, insertErasure, insertErasureLanguage, liveLanguages, pageOfErasures } from './erasure.repository.js';
import { type Erasure, erasureListQuerySchema, erasureWriteSchema } from './erasure.schema.js';

const erasureWrite = new Validator(erasureWriteSchema);

/**
 * POST /api/v2/erasures (interface §24): accepts the erasure and, in the
 * same transaction, queues one change per language it reaches, numbered
 * like any write of that language (sync/erasure.applier.ts applies it).
 * @throws {ValidationError} for a bad body, neither or both of email and profile_id, or a language the account does not have
 */
export async function createErasure(context: WriteContext, body: unknown): Promise<Erasure> {
  const input = parseEnvelope('erasure', body, erasureWrite);
  if (input.email === undefined && input.profile_id === undefined) throw new ValidationError('missing_parameters', ['email', 'profile_id']);
  if (input.email !== undefined && input.profile_id !== undefined)
    throw new ValidationError('invalid_parameters', ['email', 'profile_id'], 'Invalid parameters: email, profile_id (send exactly one)');
  const all = await liveLanguages(context.db, context.accountId);
  let languages = all;
  if (input.languages) {
    const wanted = new Set(input.languages);
    languages = all.filter((language) => wanted.has(language.id));
    const unknown = [...wanted].filter((id) => !languages.some((language) => language.id === id));
    if (unknown.length > 0)
      throw new ValidationError('invalid_parameters', ['languages'], 'Invalid parameters: languages (unknown language)');
  }
  const id = randomUUID();
  const email = input.email?.toLowerCase() ?? null;
  await context.db.transaction(async (tx) => {
    await insertErasure(tx, {
      id,
      accountId: context.accountId,
      email,
      profileId: input.profile_id ?? null,
      empty: languages.length === 0,
    });
    // Languages in key order, as every writer of several takes their locks.
    for (const language of languages) {
      await holdLanguageForWrite(tx, language.lang_key);
      const seq = await queueChange(tx, language.lang_key, ERASURE_KIND, ERASE_ACTION, id, originOf(context, language.id), {
        erasure_id: id,
      });
      await insertErasureLanguage(tx, id, language, seq);
    }
  });
  for (const language of languages) context.notifier.notify(language.lang_key, context.requestId);
  return requireErasure(context, id);
}

/** @throws {RecordNotFoundError} when the account has no such erasure */
export async function requireErasure(context: Pick<WriteContext, 'db' | 'accountId'>, id: string): Promise<Erasure> {
  const erasure = await findErasure(context.db, context.accountId, id);
  if (!erasure) throw new RecordNotFoundError('Erasure');
  return erasure;
}

/** GET /api/v2/erasures: `{"data","meta"}`, oldest first. @throws {ValidationError} */
export async function listErasures(context: Pick<WriteContext, 'db' | 'accountId'>, rawQuery: Record<string, unknown>) {
  const query = parseOrThrow(erasureListQuerySchema, rawQuery);
  const { total, rows } = await pageOfErasures(context.db, context.accountId, (query.page - 1) * query.per_page, query.per_page);
  return { data: rows, meta: { current_page: query.page, per_page: query.per_page, total } };
}
