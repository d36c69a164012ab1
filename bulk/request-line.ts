import type { DatabaseTransactionConnection } from 'slonik';
import { isStorableText } from '../catalogue/primitives.schema.js';
import { KINDS } from '../catalogue/record-kinds.js';
import { LanguageNotFoundError, RecordNotFoundError } from '../platform/errors.js';
import { deleteLineIn, putLineIn } from '../records/order-lines.service.js';
import { changeLinkIn } from '../records/record.service.js';
import { type ChangeOrigin, deleteRecord } from '../sync/write.repository.js';
import type { BulkLine } from './bulk-line.parser.js';

/**
 * A delete, link or line write of a bulk line, as its single request makes
 * it, in the batch's transaction (which holds the language).
 * @returns false when the language is gone.
 * @throws {AppError} the line's client error, as the single request answers it.
 */
export async function applyRequestLine(
  tx: DatabaseTransactionConnection,
  langKey: number,
  origin: ChangeOrigin,
  line: Exclude<BulkLine, { type: 'write' }>,
): Promise<boolean> {
  try {
    switch (line.type) {
      case 'delete': {
        const resource = KINDS[line.kind].resource;
        if (!isStorableText(line.id)) throw new RecordNotFoundError(resource);
        if (!(await deleteRecord(tx, langKey, line.kind, line.id, origin))) throw new RecordNotFoundError(resource);
        return true;
      }
      case 'link':
        await changeLinkIn(tx, langKey, origin, line.link, line.productId, line.otherId, line.action);
        return true;
      case 'line':
        if (line.remove) await deleteLineIn(tx, langKey, origin, line);
        else await putLineIn(tx, langKey, origin, line, line.body);
        return true;
    }
  } catch (error) {
    if (error instanceof LanguageNotFoundError) return false;
    throw error;
  }
}
