import { describe, expect, it } from 'vitest';
import type { ItemShape } from './item-shape.js';
import type { ListRequest } from './list-request.js';
import { DRIVE_FROM_LINKS_MAX, listStatement } from './list-statement.js';
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

/** The statement's text with whitespace collapsed, and its bound values. */
const build = (overrides: Partial<ListRequest> = {}) => {
  const statement = listStatement(42, request(overrides));
  return { text: statement.sql.replace(/\s+/g, ' '), values: statement.values };
};

describe('when the statement of a v2 list is built', () => {
  it('should take an unfiltered total from the live-record counter', () => {
    const { text, values } = build();
    expect(text).toContain('FROM record_count_deltas');
    expect(values).toEqual(expect.arrayContaining([42, 'product', 3, 25]));
  });

  it('should count a filtered list over the list index, with every filter bound as a parameter', () => {
    const filters = {
      created_after: '2026-01-01T00:00:00.000Z',
      created_before: '2026-02-01T00:00:00.000Z',
      updated_after: '2026-01-15T00:00:00.000Z',
      updated_before: "2026-03-01T00:00:00.000Z'; DROP TABLE records; --",
    };
    const { text, values } = build({ filters });
    expect(text).not.toContain('record_count_deltas');
    for (const [column, operator] of [
      ['created_at', '>'],
      ['created_at', '<'],
      ['updated_at', '>'],
      ['updated_at', '<'],
    ]) {
      expect(text).toMatch(new RegExp(`${column} ${operator} \\$slonik_\\d+::timestamptz`));
    }
    expect(values).toEqual(expect.arrayContaining(Object.values(filters)));
    expect(text).not.toContain('DROP TABLE');
  });

  it('should read a small linked list from its links, and bound how many links it counts when filtered', () => {
    const linked = build({ scope: { type: 'linked', rel: 'product_category', side: 'a', other: 'C1' }, kind: 'product' });
    expect(linked.text).toContain("WHEN w.branch = 'links'");
    expect(linked.values).toEqual(expect.arrayContaining(['product_category', 'C1', DRIVE_FROM_LINKS_MAX]));
    const filtered = build({
      scope: { type: 'linked', rel: 'product_category', side: 'a', other: 'C1' },
      filters: { created_after: '2026-01-01T00:00:00.000Z' },
    });
    expect(filtered.values).toContain(DRIVE_FROM_LINKS_MAX + 1);
  });

  it('should check the parent of a sub-listing in the same statement', () => {
    const { text, values } = build({
      kind: 'variant',
      scope: { type: 'variants-of', productId: 'P9' },
      parent: { kind: 'product', id: 'P9' },
    });
    expect(text).toMatch(
      /EXISTS \( SELECT 1 FROM records WHERE lang_key = \$slonik_\d+ AND kind = \$slonik_\d+ AND id = \$slonik_\d+ AND live \) AS parent_live/,
    );
    expect(values).toEqual(expect.arrayContaining(['product', 'P9']));
    expect(build().text).toContain('TRUE AS parent_live');
  });

  it('should cap the page with a constant in its text, the same for every page size, so one generic plan serves them all', () => {
    const small = build({ perPage: 10 });
    const large = build({ perPage: 250 });
    expect(small.text).toMatch(/AS branches LIMIT '251'::int8/);
    expect(large.text).toBe(small.text);
    expect(large.values).toContain(250);
  });
});

describe("when a page's records are read", () => {
  it('should read them in one range scan of the list from the walked edge of the page, not probe each by its key', () => {
    const { text } = build({ kind: 'variant' });
    expect(text).toMatch(
      /SELECT id, data, created_at, updated_at FROM records WHERE .*? AND \(created_at, id\) >= \(\(SELECT created_at FROM edge\), \(SELECT id FROM edge\)\) ORDER BY created_at ASC, id ASC/,
    );
    expect(text).toMatch(
      /AND \(created_at, id\) <= \(\(SELECT created_at FROM edge\), \(SELECT id FROM edge\)\) ORDER BY created_at DESC, id DESC/,
    );
    expect(text).not.toContain('id = page.id');
  });

  it("should probe a linked list's rows each by its key in a LIMIT 1 lateral, which no statistics can turn into a scan of the kind", () => {
    const { text } = build({ scope: { type: 'linked', rel: 'product_category', side: 'a', other: 'C1' } });
    expect(text).toMatch(
      /\) AS page CROSS JOIN LATERAL \( SELECT id, data, created_at, updated_at FROM records WHERE lang_key = \$slonik_\d+ AND kind = \$slonik_\d+ AND id = page\.id LIMIT 1 \) AS r/,
    );
    expect(text).not.toMatch(/JOIN records r ON/);
  });
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
