import type { CommonQueryMethods } from 'slonik';
import type { Database } from '../platform/db.js';
import { LanguageNotFoundError, RecordNotFoundError, ValidationError } from '../platform/errors.js';
import { holdLanguageForWrite } from '../sync/locks.js';
import {
  type ChangeOrigin,
  deleteRecord,
  queueChange,
  type RecordTimes,
  type StoredRecord,
  type WrittenRecord,
  writeRecord,
} from '../sync/write.repository.js';
import { findLiveRecord, findProfileByEmail, shareLockLiveRecord } from './record.repository.js';
import { originOf, type WriteContext } from './write-context.js';

export type { WriteContext } from './write-context.js';

import { parseEnvelope } from '../catalogue/envelope.schema.js';
import { isStorableText } from '../catalogue/primitives.schema.js';
import { KINDS, type KindDefinition, type RecordKind } from '../catalogue/record-kinds.js';
import { forgetLanguageForWrites, languageForWrites, requireLanguage } from './language.service.js';

/** The interface generation of a write: v1 POST bodies or v2 PUT bodies (products and categories). */
export type Generation = 'v1' | 'v2';

/** The kind as a write of `generation` sees it: its schema and stored fields (v2 writes carry no lists). */
export function writeView(kind: RecordKind, generation: Generation = 'v1'): KindDefinition {
  const definition = KINDS[kind];
  if (generation === 'v1') return definition;
  if (!definition.v2) throw new Error(`${kind} has no v2 write`);
  return { ...definition, schema: definition.v2.schema, dataFields: definition.v2.dataFields, lists: [] };
}

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
async function resolveProfileId(db: CommonQueryMethods, langKey: number, input: Record<string, unknown>): Promise<string> {
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
 * parseEnvelope, except that profile rule 9's missing id/email (which needs the
 * database) still comes before unknown and invalid fields (CONTRACT 4 order).
 */
async function parseRecord(
  kind: RecordKind,
  body: unknown,
  definition: KindDefinition,
  checkProfileMissing: (raw: Record<string, unknown>) => Promise<void>,
): Promise<Record<string, unknown>> {
  try {
    return parseEnvelope(kind, body, definition.schema) as Record<string, unknown>;
  } catch (error) {
    const v2 = KINDS[kind].v2;
    if (
      v2 &&
      definition.schema === v2.schema &&
      error instanceof ValidationError &&
      error.errorClass === 'unknown_parameters' &&
      error.parameters.some((name) => v2.readOnlyLists.includes(name))
    ) {
      // CONTRACT 8: a v2 write naming a link list points to the assignment endpoints.
      throw new ValidationError('unknown_parameters', error.parameters, `${error.message}. ${v2.hint}`);
    }
    if (kind !== 'profile' || !(error instanceof ValidationError) || error.errorClass === 'missing_parameters') throw error;
    const raw = (body as Record<string, unknown>)['profile'] as Record<string, unknown>;
    // A present but malformed id or email is reported as invalid, not as missing.
    const rawId = raw['id'];
    if (rawId !== undefined && rawId !== null && typeof rawId !== 'string' && typeof rawId !== 'number') throw error;
    if (raw['email'] !== undefined && raw['email'] !== null && typeof raw['email'] !== 'string') throw error;
    const probe = {
      id: typeof raw['id'] === 'string' || typeof raw['id'] === 'number' ? String(raw['id']) : undefined,
      email: typeof raw['email'] === 'string' ? raw['email'] : undefined,
    };
    if (probe.id !== undefined && !isStorableText(probe.id)) throw error;
    if (probe.email !== undefined && !isStorableText(probe.email)) throw error;
    await checkProfileMissing(probe);
    throw error;
  }
}

/** A validated write, ready to be stored: what single writes and bulk lines share. */
export interface PreparedWrite {
  kind: RecordKind;
  id: string;
  fields: Record<string, unknown>;
  lists: Record<string, string[]>;
  times: RecordTimes;
  payload: Record<string, unknown>;
  /** v1 unless stated. */
  generation?: Generation;
}

/**
 * Validates a v1 write body (CONTRACT 4) and resolves the record it targets
 * (profile rule 9 reads the database).
 * @throws {ValidationError}
 */
export async function prepareWrite(
  db: CommonQueryMethods,
  langKey: number,
  kind: RecordKind,
  body: unknown,
  generation: Generation = 'v1',
): Promise<PreparedWrite> {
  const definition = writeView(kind, generation);
  const input = await parseRecord(kind, body, definition, async (raw) => {
    await resolveProfileId(db, langKey, raw);
  });
  const id = kind === 'profile' ? await resolveProfileId(db, langKey, input) : (input['id'] as string);
  const { fields, lists, times } = splitInput(definition, input);
  return { kind, id, fields, lists, times, payload: { ...input, id }, generation };
}

/**
 * Stores a prepared write, in the caller's transaction or alone.
 * @returns null when the language was deleted meanwhile.
 */
export async function storePrepared(
  db: CommonQueryMethods,
  langKey: number,
  prepared: PreparedWrite,
  origin: ChangeOrigin,
): Promise<WrittenRecord | null> {
  return writeRecord(db, langKey, prepared.kind, prepared.id, prepared.fields, prepared.times, origin, prepared.payload);
}

/** The response record: stored fields (of the write's generation) plus the list fields this write sent. */
export function presentWrite(prepared: PreparedWrite, record: StoredRecord): Record<string, unknown> {
  const response = presentRecord(writeView(prepared.kind, prepared.generation), record);
  for (const [field, ids] of Object.entries(prepared.lists)) response[field] = ids;
  return response;
}

/**
 * Validates and saves one record (a v1 POST body, or a v2 PUT body with
 * `generation` 'v2'): the record's own fields are durable when this returns;
 * stubs, links and audit entries follow through the outbox.
 * @throws {ValidationError} per CONTRACT 4 and 8. @throws {LanguageNotFoundError}
 */
export async function saveRecord(
  context: WriteContext,
  languageId: string,
  kind: RecordKind,
  body: unknown,
  generation: Generation = 'v1',
) {
  // The language usually comes from a per-process cache; the write itself checks that it is still live.
  for (let fresh = false; ; fresh = true) {
    const language = await languageForWrites(context.db, context.accountId, languageId, fresh);
    let prepared: PreparedWrite;
    try {
      prepared = await prepareWrite(context.db, language.lang_key, kind, body, generation);
    } catch (error) {
      // A deleted language answers 404 before any validation error (CONTRACT 4), even while cached here.
      if (!fresh) await requireLanguage(context.db, context.accountId, languageId);
      throw error;
    }
    const record = await storePrepared(context.db, language.lang_key, prepared, originOf(context, languageId));
    if (record) {
      context.notifier.notify(language.lang_key);
      return presentWrite(prepared, record);
    }
    forgetLanguageForWrites(context.db, context.accountId, languageId);
    // Deleted, or deleted and created again under a new key since it was cached: look once more.
    if (fresh) throw new LanguageNotFoundError(languageId);
  }
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
    await holdLanguageForWrite(tx, language.lang_key);
    return deleteRecord(tx, language.lang_key, kind, id, originOf(context, languageId));
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

/**
 * v2 product-category assignment (PUT) or its removal (DELETE). The link is
 * applied by the worker in write order, like every relation change.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError} when the product or the category does not exist.
 */
export async function changeAssignment(
  context: WriteContext,
  languageId: string,
  productId: string,
  categoryId: string,
  action: 'assign' | 'unassign',
): Promise<void> {
  const language = await requireLanguage(context.db, context.accountId, languageId);
  if (!isStorableText(productId)) throw new RecordNotFoundError('Product');
  if (!isStorableText(categoryId)) throw new RecordNotFoundError('Category');
  await context.db.transaction(async (tx) => {
    await holdLanguageForWrite(tx, language.lang_key);
    if (!(await shareLockLiveRecord(tx, language.lang_key, 'product', productId))) throw new RecordNotFoundError('Product');
    if (!(await shareLockLiveRecord(tx, language.lang_key, 'category', categoryId))) throw new RecordNotFoundError('Category');
    await queueChange(tx, language.lang_key, 'product', action, productId, originOf(context, languageId), { category_id: categoryId });
  });
  context.notifier.notify(language.lang_key);
}
