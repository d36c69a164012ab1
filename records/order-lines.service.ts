/*
 * The lines of orders and shopping carts: one line written or deleted on its
 * own (v2 sub-resources), and a record's whole list of lines stored with it.
 */
import type { DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { KINDS, LINE_LISTS, LINE_PAYLOAD, type LineParent } from '../catalogue/record-kinds.js';
import { orderLineV2Schema, v2IdSchema } from '../catalogue/record-schemas.js';
import { Validator } from '../catalogue/validation.js';
import { BadRequestError, LanguageNotFoundError, RecordNotFoundError, ValidationError } from '../platform/errors.js';
import { holdLanguageForWrite } from '../sync/locks.js';
import { type ChangeOrigin, type StoredRecord, writeRecord } from '../sync/write.repository.js';
import { requireLanguage } from './language.service.js';
import { lockLiveRecord } from './record.repository.js';
import { originOf, type WriteContext } from './write-context.js';

/** A line as the order lines list shows it (interface §15). */
export interface OrderLine {
  id: string;
  quantity: number | null;
  variant_id: string | null;
  custom_attributes?: unknown[];
}

export const lineBodySchema = z
  .object({
    quantity: orderLineV2Schema.shape.quantity,
    variant_id: orderLineV2Schema.shape.variant_id,
    custom_attributes: orderLineV2Schema.shape.custom_attributes,
  })
  .strict();
const lineBody = new Validator(lineBodySchema);

/** The stored lines of a parent, in order (a list of ids for carts, of line objects for orders). */
export function storedLines(parent: LineParent, record: StoredRecord): Array<OrderLine | string> {
  const value = record.data[LINE_LISTS[parent].field];
  return Array.isArray(value) ? (value as Array<OrderLine | string>) : [];
}

export const lineProduct = (line: OrderLine | string) => (typeof line === 'string' ? line : line.id);

/**
 * PUT .../orders/{order_id}/products/{product_id} or
 * .../shopping_carts/{cart_id}/products/{product_id} (interface §15): appends
 * the product's line, or updates it in place (sent fields replace, omitted
 * keep); where a v1 order repeats the product, one line stays, at the first
 * one's place. The parent is read and written under its row lock, so the
 * line list is never lost to a concurrent write; the change is audited as an
 * `update` of the parent and stubs a missing product.
 * @returns the order line (carts: null).
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError} the parent. @throws {ValidationError} the body.
 */
export async function putLine(
  context: WriteContext,
  languageId: string,
  parent: LineParent,
  parentId: string,
  productId: string,
  body: unknown,
): Promise<OrderLine | null> {
  return inLineTransaction(context, languageId, (tx, langKey, origin) =>
    putLineIn(tx, langKey, origin, { parent, parentId, productId }, body),
  );
}

/**
 * DELETE of a line (interface §15): removes every line of the product; 204
 * also when there is none, and then nothing is written.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError} the parent.
 */
export async function deleteLine(
  context: WriteContext,
  languageId: string,
  parent: LineParent,
  parentId: string,
  productId: string,
): Promise<void> {
  await inLineTransaction(context, languageId, (tx, langKey, origin) => deleteLineIn(tx, langKey, origin, { parent, parentId, productId }));
}

/** A line write in a transaction of its own that holds the language; the worker is woken when it wrote. */
export async function inLineTransaction<T>(
  context: WriteContext,
  languageId: string,
  write: (tx: DatabaseTransactionConnection, langKey: number, origin: ChangeOrigin) => Promise<LineWrite<T>>,
): Promise<T> {
  const language = await requireLanguage(context.db, context.accountId, languageId);
  const result = await context.db.transaction(async (tx) => {
    // The language's shared lock before any row lock, as every writer (docs/consistency.md).
    await holdLanguageForWrite(tx, language.lang_key);
    return write(tx, language.lang_key, originOf(context, languageId));
  });
  if (result.written) context.notifier.notify(language.lang_key, context.requestId);
  return result.line;
}

/** What a line write did: whether it wrote the parent, and the order line it answers with. */
/** The line a line write names: a product's line of an order or a cart. */
export interface LineTarget {
  parent: LineParent;
  parentId: string;
  productId: string;
}

export interface LineWrite<T> {
  written: boolean;
  line: T;
}

/**
 * putLine in the caller's transaction, which holds the language (a bulk line).
 * @throws {RecordNotFoundError} the parent. @throws {ValidationError} the body. @throws {LanguageNotFoundError}
 */
export async function putLineIn(
  tx: DatabaseTransactionConnection,
  langKey: number,
  origin: ChangeOrigin,
  { parent, parentId, productId }: LineTarget,
  body: unknown,
): Promise<LineWrite<OrderLine | null>> {
  return writeLines(tx, langKey, origin, parent, parentId, (record) => {
    // The parent is checked before the body, as a sub-listing checks its parent before its query.
    if (!v2IdSchema.safeParse(productId).success) throw new ValidationError('invalid_parameters', ['product_id']);
    const lines = storedLines(parent, record);
    const first = lines.findIndex((line) => lineProduct(line) === productId);
    // A cart line is only its product: the request takes no body (one that is sent is not read).
    if (parent === 'shopping_cart') {
      return { lines: first === -1 ? [...lines, productId] : lines, change: { [LINE_PAYLOAD.product]: productId }, line: null };
    }
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
      throw new BadRequestError('The request body must be a JSON object');
    }
    const sent = lineBody.parse(body ?? {});
    const old = first === -1 ? undefined : (lines[first] as OrderLine);
    const line: OrderLine = {
      id: productId,
      quantity: sent.quantity !== undefined ? sent.quantity : first === -1 ? 1 : (old!.quantity ?? null),
      variant_id: sent.variant_id !== undefined ? sent.variant_id : (old?.variant_id ?? null),
    };
    const attributes = sent.custom_attributes !== undefined ? sent.custom_attributes : old?.custom_attributes;
    if (attributes !== undefined && attributes !== null) line.custom_attributes = attributes;
    const next =
      first === -1
        ? [...lines, line]
        : lines.flatMap((item, index) => (index === first ? [line] : lineProduct(item) === productId ? [] : [item]));
    return { lines: next, change: { [LINE_PAYLOAD.product]: productId, line }, line };
  });
}

/**
 * deleteLine in the caller's transaction, which holds the language (a bulk line).
 * @throws {RecordNotFoundError} the parent. @throws {LanguageNotFoundError}
 */
export async function deleteLineIn(
  tx: DatabaseTransactionConnection,
  langKey: number,
  origin: ChangeOrigin,
  { parent, parentId, productId }: LineTarget,
): Promise<LineWrite<null>> {
  return writeLines(tx, langKey, origin, parent, parentId, (record) => {
    const lines = storedLines(parent, record);
    const next = lines.filter((line) => lineProduct(line) !== productId);
    return next.length === lines.length
      ? null
      : { lines: next, change: { [LINE_PAYLOAD.product]: productId, [LINE_PAYLOAD.removed]: true }, line: null };
  });
}

/**
 * Reads the parent under its row lock, lets `edit` compute its new lines, and
 * writes them as one upsert of the parent whose payload names the line's
 * product (`line_product_id`, stubbed unless `line_removed`): the applier
 * audits it as an update of the parent (sync/change.applier.ts). `edit`
 * returning null writes nothing. The caller holds the language.
 */
export async function writeLines<T>(
  tx: DatabaseTransactionConnection,
  langKey: number,
  origin: ChangeOrigin,
  parent: LineParent,
  parentId: string,
  edit: (record: StoredRecord) => { lines: unknown[]; change: Record<string, unknown>; line: T } | null,
): Promise<LineWrite<T | null>> {
  // A parent id v2 could not have written names no record.
  if (!v2IdSchema.safeParse(parentId).success) throw new RecordNotFoundError(KINDS[parent].resource);
  const record = await lockLiveRecord(tx, langKey, parent, parentId);
  if (!record) throw new RecordNotFoundError(KINDS[parent].resource);
  const edited = edit(record);
  if (!edited) return { written: false, line: null };
  const written = await writeRecord(tx, {
    langKey,
    kind: parent,
    id: parentId,
    fields: { [LINE_LISTS[parent].field]: edited.lines },
    times: {},
    origin,
    payload: { id: parentId, ...edited.change },
  });
  if (!written) throw new LanguageNotFoundError(origin.languageId);
  return { written: true, line: edited.line };
}
