import { describe, expect, it } from 'vitest';
import type { ItemShape } from './item-shape.js';
import type { ListRequest } from './list-request.js';
import { DRIVE_FROM_LINKS_MAX, listStatement } from './list-statement.js';

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
