import type { CommonQueryMethods, DatabaseTransactionConnection } from 'slonik';
import type { Database } from '../platform/db.js';
import { LanguageNotFoundError, RecordNotFoundError, ValidationError } from '../platform/errors.js';
import { holdLanguageForWrite } from '../sync/locks.js';
import type { PreparedWriter } from '../sync/prepared-write.js';
import {
  type ChangeOrigin,
  deleteRecord,
  queueChange,
  type RecordTimes,
  type StoredRecord,
  type WrittenRecord,
  writeRecord,
} from '../sync/write.repository.js';
import { databaseProfiles, type ProfileDirectory, resolveProfileId } from './profile-matching.js';
import { findLiveRecord, findProfileByEmail, languageIsLive, shareLockLiveRecord } from './record.repository.js';
import { originOf, type WriteContext } from './write-context.js';

export type { WriteContext } from './write-context.js';

import { parseEnvelope } from '../catalogue/envelope.schema.js';
import { isStorableText } from '../catalogue/primitives.schema.js';
import { KINDS, type KindDefinition, type LinkWriter, type StoredKind } from '../catalogue/record-kinds.js';
import { requireLanguage } from './language.service.js';

/** The interface generation of a write: v1 POST bodies or v2 PUT bodies. */
export type Generation = 'v1' | 'v2';

/** The kind as a write of `generation` sees it: its schema and stored fields (v2 writes carry no link lists). */
export function writeView(kind: StoredKind, generation: Generation = 'v1'): KindDefinition {
  const definition = KINDS[kind];
  if (generation === 'v1') return definition;
  return {
    ...definition,
    schema: definition.v2.schema,
    validator: definition.v2.validator,
    dataFields: definition.v2.dataFields,
    lists: [],
  };
}

/** A v1 order line: `{id, quantity}`, quantity null when unset; v2's line fields are not shown (interface §13.6). */
const v1OrderLines = (value: unknown) =>
  Array.isArray(value) ? value.map((line: Record<string, unknown>) => ({ id: line['id'], quantity: line['quantity'] ?? null })) : value;

/** The record as v1 responses show it: id, every v1 data field (null when unset), the kind's timestamps. */
export function presentRecord(definition: KindDefinition, record: StoredRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { id: record.id };
  for (const field of definition.dataFields) out[field] = record.data[field] ?? null;
  if (definition.kind === 'order') out['products'] = v1OrderLines(out['products']);
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

/** parseEnvelope; a v2 write sending a read-only field is told how to change it (interface §8, §14). */
function parseEnvelopeHinted(kind: StoredKind, body: unknown, definition: KindDefinition, generation: Generation): Record<string, unknown> {
  try {
    return parseEnvelope(kind, body, definition.validator) as Record<string, unknown>;
  } catch (error) {
    const v2 = KINDS[kind].v2;
    if (
      generation === 'v2' &&
      v2.hint &&
      error instanceof ValidationError &&
      error.errorClass === 'unknown_parameters' &&
      error.parameters.some((name) => v2.readOnly.includes(name))
    ) {
      throw new ValidationError('unknown_parameters', error.parameters, `${error.message}. ${v2.hint}`);
    }
    throw error;
  }
}

/**
 * parseEnvelopeHinted, except that the profile rule's missing id/email (which needs the
 * database) still comes before unknown and invalid fields (interface §4.3 order).
 */
async function parseRecord(
  kind: StoredKind,
  body: unknown,
  definition: KindDefinition,
  generation: Generation,
  checkProfileMissing: (raw: Record<string, unknown>) => Promise<void>,
): Promise<Record<string, unknown>> {
  try {
    return parseEnvelopeHinted(kind, body, definition, generation);
  } catch (error) {
    // v2 profiles need both id and email on every write, so only v1's profile rule (interface §4.5) reads the database first.
    if (kind !== 'profile' || generation === 'v2' || !(error instanceof ValidationError) || error.errorClass === 'missing_parameters')
      throw error;
    const raw = (body as Record<string, unknown>)['profile'];
    // Not a record at all ({"profile": null}): nothing to match, the envelope's error stands.
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw error;
    // A present but malformed id or email is reported as invalid, not as missing.
    const { id: rawId, email: rawEmail } = raw as Record<string, unknown>;
    if (rawId !== undefined && rawId !== null && typeof rawId !== 'string' && typeof rawId !== 'number') throw error;
    if (rawEmail !== undefined && rawEmail !== null && typeof rawEmail !== 'string') throw error;
    const probe = {
      id: typeof rawId === 'string' || typeof rawId === 'number' ? String(rawId) : undefined,
      email: typeof rawEmail === 'string' ? rawEmail : undefined,
    };
    if (probe.id !== undefined && !isStorableText(probe.id)) throw error;
    if (probe.email !== undefined && !isStorableText(probe.email)) throw error;
    await checkProfileMissing(probe);
    throw error;
  }
}

/** A validated write, ready to be stored: what single writes and bulk lines share. */
export interface PreparedWrite {
  kind: StoredKind;
  id: string;
  fields: Record<string, unknown>;
  lists: Record<string, string[]>;
  times: RecordTimes;
  payload: Record<string, unknown>;
  /** v1 unless stated. */
  generation?: Generation;
}

/**
 * Validates a v1 write body (interface §4) and resolves the record it targets
 * (the profile rule of interface §4.5 reads the database).
 * @throws {ValidationError}
 */
export async function prepareWrite(
  db: CommonQueryMethods,
  langKey: number,
  kind: StoredKind,
  body: unknown,
  generation: Generation = 'v1',
): Promise<PreparedWrite> {
  if (kind !== 'profile') return prepareWriteAlone(kind, body, generation);
  return prepareProfileWrite(databaseProfiles(db, langKey), body, generation);
}

/**
 * prepareWrite of a profile, matched (the profile rule, interface §4.5) against `profiles`.
 * @throws {ValidationError}
 */
export async function prepareProfileWrite(
  profiles: ProfileDirectory,
  body: unknown,
  generation: Generation = 'v1',
): Promise<PreparedWrite> {
  const definition = writeView('profile', generation);
  const input = await parseRecord('profile', body, definition, generation, async (raw) => {
    await resolveProfileId(profiles, raw);
  });
  return preparedOf('profile', definition, input, await resolveProfileId(profiles, input), generation);
}

/**
 * prepareWrite of a kind whose id is in its body: every kind but the profile
 * (the profile rule of interface §4.5 matches profiles in the database). It reads nothing, so a bulk
 * batch can prepare its lines before its turn (bulk/batch.prefetcher.ts).
 * @throws {ValidationError}
 */
export function prepareWriteAlone(kind: Exclude<StoredKind, 'profile'>, body: unknown, generation: Generation = 'v1'): PreparedWrite {
  const definition = writeView(kind, generation);
  const input = parseEnvelopeHinted(kind, body, definition, generation);
  return preparedOf(kind, definition, input, recordIdOf(definition, input), generation);
}

/** A checked body, with the id of the record it writes, as a write ready to be stored. */
function preparedOf(
  kind: StoredKind,
  definition: KindDefinition,
  input: Record<string, unknown>,
  id: string,
  generation: Generation,
): PreparedWrite {
  const { fields, lists, times } = splitInput(definition, input);
  return { kind, id, fields, lists, times, payload: { ...input, id }, generation };
}

/** The record's id: its `id`, or the body field that names it (interface §16, §17). */
function recordIdOf(definition: KindDefinition, input: Record<string, unknown>): string {
  if (!definition.idFrom) return input['id'] as string;
  const value = input[definition.idFrom.field] as string;
  return definition.idFrom.lowerCase ? value.toLowerCase() : value;
}

/**
 * The record a write needs (a purchase event's order), held against a
 * concurrent delete until the caller's transaction commits.
 * @throws {RecordNotFoundError} with the required record's body.
 */
export async function holdRequiredRecord(tx: DatabaseTransactionConnection, langKey: number, prepared: PreparedWrite): Promise<void> {
  const requires = KINDS[prepared.kind].requires;
  if (!requires) return;
  const id = prepared.payload[requires.field] as string;
  if (!(await shareLockLiveRecord(tx, langKey, requires.kind, id))) throw new RecordNotFoundError(KINDS[requires.kind].resource);
}

/**
 * Stores a prepared write, in the caller's transaction or alone. Alone, a
 * write that needs no other record goes through `writer`, the prepared
 * single-write statement (sync/prepared-write.ts).
 * @returns null when the language was deleted meanwhile.
 */
export async function storePrepared(
  db: CommonQueryMethods,
  langKey: number,
  prepared: PreparedWrite,
  origin: ChangeOrigin,
  writer?: PreparedWriter,
): Promise<WrittenRecord | null> {
  if (!KINDS[prepared.kind].requires) {
    const { kind, id, fields, times, payload } = prepared;
    const write = { langKey, kind, id, fields, times, origin, payload };
    return writer ? writer.writeRecord(write) : writeRecord(db, write);
  }
  return db.transaction(async (tx) => {
    await holdLanguageForWrite(tx, langKey);
    if (!(await languageIsLive(tx, langKey))) return null;
    await holdRequiredRecord(tx, langKey, prepared);
    const { kind, id, fields, times, payload } = prepared;
    return writeRecord(tx, { langKey, kind, id, fields, times, origin, payload });
  });
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
 * @throws {ValidationError} per interface §4 and §8. @throws {LanguageNotFoundError}
 */
export async function saveRecord(
  context: WriteContext,
  languageId: string,
  kind: StoredKind,
  body: unknown,
  generation: Generation = 'v1',
) {
  const { prepared, record } = await storeRecord(context, languageId, kind, body, generation);
  return presentWrite(prepared, record);
}

/**
 * saveRecord without the v1 presentation: the stored record, for v2 to show in its own shape.
 * @throws {ValidationError} @throws {LanguageNotFoundError} @throws {RecordNotFoundError} a required record is missing.
 */
export async function storeRecord(
  context: WriteContext,
  languageId: string,
  kind: StoredKind,
  body: unknown,
  generation: Generation = 'v1',
): Promise<{ prepared: PreparedWrite; record: StoredRecord }> {
  // The language usually comes from a per-process cache; the write itself checks that it is still live.
  for (let fresh = false; ; fresh = true) {
    const language = await context.languages.get(context.accountId, languageId, fresh);
    let prepared: PreparedWrite;
    try {
      prepared = await prepareWrite(context.db, language.lang_key, kind, body, generation);
    } catch (error) {
      // A deleted language answers 404 before any validation error (interface §4), even while cached here.
      if (!fresh) await requireLanguage(context.db, context.accountId, languageId);
      throw error;
    }
    const record = await storePrepared(context.db, language.lang_key, prepared, originOf(context, languageId), context.writer);
    if (record) {
      context.notifier.notify(language.lang_key, context.requestId);
      return { prepared, record };
    }
    context.languages.forget(context.accountId, languageId);
    // Deleted, or deleted and created again under a new key since it was cached: look once more.
    if (fresh) throw new LanguageNotFoundError(languageId);
  }
}

/**
 * Deletes one record; its cascade follows through the outbox.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError}
 */
export async function removeRecord(context: WriteContext, languageId: string, kind: StoredKind, id: string) {
  const definition = KINDS[kind];
  const language = await requireLanguage(context.db, context.accountId, languageId);
  if (!isStorableText(id)) throw new RecordNotFoundError(definition.resource);
  const before = await context.db.transaction(async (tx) => {
    await holdLanguageForWrite(tx, language.lang_key);
    return deleteRecord(tx, language.lang_key, kind, id, originOf(context, languageId));
  });
  if (!before) throw new RecordNotFoundError(definition.resource);
  context.notifier.notify(language.lang_key, context.requestId);
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
 * A v2 link writer (interface §15, §8): a product's category
 * assignment or related product, added (PUT) or removed (DELETE). Both
 * records must exist; no stubs. The link is applied by the worker in write
 * order, like every relation change.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError} when the product or the other record does not exist.
 */
export async function changeLink(
  context: WriteContext,
  languageId: string,
  link: LinkWriter,
  productId: string,
  otherId: string,
  action: 'assign' | 'unassign',
): Promise<void> {
  const language = await requireLanguage(context.db, context.accountId, languageId);
  await context.db.transaction(async (tx) => {
    // The language's shared lock before any row lock, as every writer (docs/consistency.md).
    await holdLanguageForWrite(tx, language.lang_key);
    await changeLinkIn(tx, language.lang_key, originOf(context, languageId), link, productId, otherId, action);
  });
  context.notifier.notify(language.lang_key, context.requestId);
}

/**
 * changeLink in the caller's transaction, which holds the language (a bulk line).
 * @throws {RecordNotFoundError} when the product or the other record does not exist.
 */
export async function changeLinkIn(
  tx: DatabaseTransactionConnection,
  langKey: number,
  origin: ChangeOrigin,
  link: LinkWriter,
  productId: string,
  otherId: string,
  action: 'assign' | 'unassign',
): Promise<void> {
  const other = KINDS[link.kind].resource;
  if (!isStorableText(productId)) throw new RecordNotFoundError('Product');
  if (!isStorableText(otherId)) throw new RecordNotFoundError(other);
  if (!(await shareLockLiveRecord(tx, langKey, 'product', productId))) throw new RecordNotFoundError('Product');
  if (!(await shareLockLiveRecord(tx, langKey, link.kind, otherId))) throw new RecordNotFoundError(other);
  await queueChange(tx, langKey, 'product', action, productId, origin, { [link.payloadKey]: otherId });
}
