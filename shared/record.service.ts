import type { Database } from './db.js';
import { LanguageNotFoundError, RecordNotFoundError, ValidationError } from './errors.js';
import type { OutboxNotifier } from './outbox-notifier.js';
import {
  beginLanguageWrite,
  deleteRecord,
  findLiveRecord,
  findProfileByEmail,
  upsertRecord,
  type StoredRecord,
  type UpsertOutcome,
} from './repositories/record.repository.js';
import { requireLanguage } from './language.service.js';
import { parseEnvelope } from './schemas/envelope.js';
import { isStorableText } from './schemas/primitives.js';
import { KINDS, type KindDefinition, type RecordKind } from './schemas/record-kinds.js';

export interface WriteContext {
  db: Database;
  notifier: OutboxNotifier;
  accountId: number;
  clientId: string;
  requestId: string;
}

const MAX_ATTEMPTS = 5;

class OvertakenError extends Error {}

/** The record as responses show it: id, every data field (null when unset), the kind's timestamps. */
export function presentRecord(definition: KindDefinition, record: StoredRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { id: record.id };
  for (const field of definition.dataFields) out[field] = record.data[field] ?? null;
  if (definition.timestamps.created) out['created_at'] = record.created_at;
  if (definition.timestamps.updated) out['updated_at'] = record.updated_at;
  return out;
}

/** Splits a validated v1 record into stored data fields, timestamps and relation lists. */
function splitInput(definition: KindDefinition, input: Record<string, unknown>) {
  const fields: Record<string, unknown> = {};
  const lists: Record<string, string[]> = {};
  for (const field of definition.dataFields) if (input[field] !== undefined) fields[field] = input[field];
  for (const list of definition.lists) {
    const value = input[list.field];
    if (value !== undefined) lists[list.field] = (value as string[] | null) ?? [];
  }
  return {
    fields,
    lists,
    times: {
      created_at: input['created_at'] as string | null | undefined,
      updated_at: input['updated_at'] as string | null | undefined,
    },
  };
}

/**
 * Applies CONTRACT 4's profile rule 9: match by id, then by email
 * (case-insensitive), keeping the matched profile's id; a new profile needs both.
 * @throws {ValidationError} missing id or email for a profile that does not exist.
 */
async function resolveProfileId(db: Database, langKey: number, input: Record<string, unknown>): Promise<string> {
  const id = input['id'] as string | undefined;
  const email = input['email'] as string | undefined;
  if (id === undefined && email === undefined) throw new ValidationError('missing_parameters', ['id', 'email']);
  if (id !== undefined && (await findLiveRecord(db, langKey, 'profile', id))) return id;
  if (email !== undefined) {
    const match = await findProfileByEmail(db, langKey, email);
    if (match) return match.id;
  }
  const missing = [id === undefined && 'id', email === undefined && 'email'].filter((name): name is string => Boolean(name));
  if (missing.length > 0) throw new ValidationError('missing_parameters', missing);
  return id!;
}

/**
 * Validates and saves one v1 record: the record's own fields are durable when
 * this returns; stubs, links and audit entries follow through the outbox.
 * @throws {ValidationError} per CONTRACT 4. @throws {LanguageNotFoundError}
 */
export async function saveRecord(context: WriteContext, languageId: string, kind: RecordKind, body: unknown) {
  const definition = KINDS[kind];
  const language = await requireLanguage(context.db, context.accountId, languageId);
  const input = parseEnvelope(kind, body, definition.schema) as Record<string, unknown>;
  const id = kind === 'profile' ? await resolveProfileId(context.db, language.lang_key, input) : (input['id'] as string);
  const { fields, lists, times } = splitInput(definition, input);
  const payload = { ...input, id };

  let outcome: UpsertOutcome | undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
    try {
      outcome = await context.db.transaction(async (tx) => {
        await beginLanguageWrite(tx, language.lang_key);
        const result = await upsertRecord(tx, language.lang_key, kind, id, fields, times, {
          accountId: context.accountId,
          languageId,
          actor: context.clientId,
          requestId: context.requestId,
          payload,
        });
        if (result.status === 'overtaken') throw new OvertakenError();
        return result;
      });
      break;
    } catch (error) {
      if (!(error instanceof OvertakenError) || attempt === MAX_ATTEMPTS) throw error;
    }
  }
  if (!outcome || outcome.status !== 'written') throw new LanguageNotFoundError(languageId);
  context.notifier.notify(language.lang_key);
  const response = presentRecord(definition, outcome.record);
  for (const [field, ids] of Object.entries(lists)) response[field] = ids;
  return response;
}

/**
 * Deletes one record; its cascade follows through the outbox.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError}
 */
export async function removeRecord(context: WriteContext, languageId: string, kind: RecordKind, id: string) {
  const definition = KINDS[kind];
  const language = await requireLanguage(context.db, context.accountId, languageId);
  if (!isStorableText(id)) throw new RecordNotFoundError(definition.resource);
  const before = await context.db.transaction(async (tx) => {
    await beginLanguageWrite(tx, language.lang_key);
    return deleteRecord(tx, language.lang_key, kind, id, {
      accountId: context.accountId,
      languageId,
      actor: context.clientId,
      requestId: context.requestId,
      payload: { id },
    });
  });
  if (!before) throw new RecordNotFoundError(definition.resource);
  context.notifier.notify(language.lang_key);
  return presentRecord(definition, before);
}

/**
 * getProfile: by id first, then by email.
 * @throws {ValidationError} when neither is given. @throws {RecordNotFoundError}
 */
export async function lookupProfile(db: Database, accountId: number, languageId: string, query: { id?: string; email?: string }) {
  const language = await requireLanguage(db, accountId, languageId);
  if (!query.id && !query.email) throw new ValidationError('missing_parameters', ['id', 'email']);
  if ((query.id && !isStorableText(query.id)) || (query.email && !isStorableText(query.email))) throw new RecordNotFoundError('Profile');
  const found =
    (query.id ? await findLiveRecord(db, language.lang_key, 'profile', query.id) : null) ??
    (query.email ? await findProfileByEmail(db, language.lang_key, query.email) : null);
  if (!found) throw new RecordNotFoundError('Profile');
  return presentRecord(KINDS.profile, found);
}

