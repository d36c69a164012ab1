import type { CommonQueryMethods } from 'slonik';
import type { StoredRecord } from '../sync/write.repository.js';
import { brandProductIds, linkedIds, profilesByEmail } from './item-lists.repository.js';
import type { ItemShape } from './item-shape.js';

/** A record as a v2 read shows it. */
export type Item = Record<string, unknown>;

/** An order's line (a cart's lines are bare product ids). */
export type Line = { id: string; quantity?: number | null; variant_id?: string | null };
export const linesOf = (record: StoredRecord): Line[] =>
  Array.isArray(record.data['products']) ? (record.data['products'] as Line[]) : [];

/** Shows records in `shape` (the JavaScript twin of the lists' SQL): one query per list field, for all records at once. */
export async function presentRecords(
  db: CommonQueryMethods,
  langKey: number,
  shape: ItemShape,
  records: readonly StoredRecord[],
): Promise<Item[]> {
  const ids = records.map((record) => record.id);
  const lists = new Map<string, Map<string, string[]>>();
  let profiles = new Map<string, string>();
  for (const part of shape) {
    if (part.from === 'links') lists.set(part.key, await linkedIds(db, langKey, part.rel, part.side, ids));
    if (part.from === 'brand_products') lists.set(part.key, await brandProductIds(db, langKey, ids));
    if (part.from === 'profile_by_email') profiles = await profilesByEmail(db, langKey, ids);
  }
  return records.map((record) => {
    const item: Item = {};
    for (const part of shape) {
      switch (part.from) {
        case 'id':
          item[part.key] = record.id;
          break;
        case 'created_at':
        case 'updated_at':
          item[part.key] = record[part.from];
          break;
        case 'field':
          item[part.key] = record.data[part.field] ?? null;
          break;
        case 'custom_attributes':
          item[part.key] = record.data['custom_attributes'] ?? [];
          break;
        case 'links':
        case 'brand_products':
          item[part.key] = lists.get(part.key)!.get(record.id) ?? [];
          break;
        case 'list':
          item[part.key] = Array.isArray(record.data[part.field]) ? record.data[part.field] : [];
          break;
        case 'order_lines':
          item[part.key] = linesOf(record).map((line) => ({
            id: line.id,
            quantity: line.quantity ?? null,
            variant_id: line.variant_id ?? null,
          }));
          break;
        case 'line_products':
          item[part.key] = [...new Set(linesOf(record).map((line) => line.id))];
          break;
        case 'profile_by_email':
          item[part.key] = profiles.get(record.id) ?? null;
          break;
      }
    }
    return item;
  });
}
