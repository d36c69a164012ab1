import { describe, expect, it } from 'vitest';
import type { ItemShape } from './item-shape.js';
import type { ListRequest } from './list-request.js';
import { listStatement } from './list-statement.js';
import { ListStatementCache } from './list-statement-cache.js';

const SHAPE: ItemShape = [{ key: 'id', from: 'id' }];
const request = (overrides: Partial<ListRequest> = {}): ListRequest => ({
  kind: 'product',
  scope: { type: 'all' },
  filters: {},
  page: 3,
  perPage: 25,
  shape: SHAPE,
  ...overrides,
});

describe('when a list statement comes from the cache of statements by structure', () => {
  const SHAPES: ItemShape[] = [
    SHAPE,
    [
      { key: 'id', from: 'id' },
      { key: 'name', from: 'field', field: 'name' },
      { key: 'category_ids', from: 'links', rel: 'product_category', side: 'a' },
      { key: 'created_at', from: 'created_at' },
      { key: 'updated_at', from: 'updated_at' },
    ],
  ];
  const scopes: ListRequest['scope'][] = [
    { type: 'all' },
    { type: 'variants-of', productId: 'P1' },
    { type: 'brand-products', brandId: 'B1' },
    { type: 'emails', emails: ['a@example.com', 'b@example.com'] },
    { type: 'linked', rel: 'product_category', side: 'a', other: 'C1' },
    { type: 'linked', rel: 'relevant', side: 'b', other: 'P2' },
  ];
  const filterSets = [
    {},
    { created_after: '2026-01-01T00:00:00.000Z' },
    { created_before: '2026-02-01T00:00:00.000Z', updated_after: '2026-01-15T00:00:00.000Z', updated_before: '2026-03-01T00:00:00.000Z' },
  ];
  const positions = (n: number): ListRequest['position'][] => [
    undefined,
    { type: 'page' },
    { type: 'after', key: { created_at: `2026-01-0${n}T00:00:00.000001Z`, id: `after-${n}` } },
    {
      type: 'anchor',
      anchor: { offset: 999 * n, key: { created_at: `2026-02-0${n}T00:00:00.000002Z`, id: `anchor-${n}` } },
      snapshot: `${n}:${n}:`,
    },
  ];
  const requests = (n: number): Array<[number, ListRequest]> =>
    SHAPES.flatMap((shape) =>
      scopes.flatMap((scope) =>
        filterSets.flatMap((filters) =>
          positions(n).flatMap((position) =>
            [undefined, { kind: 'product' as const, id: `parent-${n}` }].map((parent): [number, ListRequest] => [
              40 + n,
              request({
                shape,
                scope,
                filters,
                page: n,
                perPage: 10 * n,
                ...(position ? { position } : {}),
                ...(parent ? { parent } : {}),
              }),
            ]),
          ),
        ),
      ),
    );

  it("should give exactly the statement built afresh, with each request's own values", () => {
    const statements = new ListStatementCache();
    // Twice over every structure with different values: the second round comes from the cache.
    for (const n of [1, 2]) {
      for (const [langKey, list] of requests(n)) {
        const fresh = listStatement(langKey, list);
        expect(statements.bound(langKey, list)).toEqual({ text: fresh.sql.replace(/\$slonik_(\d+)/g, '$$$1'), values: fresh.values });
      }
    }
  });
});
