import { describe, expect, it } from 'vitest';
import { decodeFeedCursor, encodeFeedCursor } from './feed-cursor.js';
import { feedPageJson } from './feed-page.js';

describe('when a feed cursor is made and read back', () => {
  it('should give back the position, whatever the language id holds', () => {
    for (const languageId of ['nl', 'a.b.c', 'ünï "cödé"', 'x'.repeat(255)]) {
      const position = { langKey: 42, seq: 9_007_199_254_740, languageId };
      const text = encodeFeedCursor(position);
      expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeFeedCursor(text)).toEqual(position);
    }
  });

  it('should refuse text it did not make', () => {
    for (const text of [
      '',
      'not a cursor!',
      Buffer.from('42.7').toString('base64url'),
      Buffer.from('x.7.nl').toString('base64url'),
      Buffer.from('42.-7.nl').toString('base64url'),
      Buffer.from('99999999999999999.7.nl').toString('base64url'),
      'A'.repeat(2_000),
    ])
      expect(decodeFeedCursor(text), text).toBeNull();
  });
});

describe('when a page is written out', () => {
  it('should join the entries and append each record to its entry', () => {
    const rows = [
      { seq: 1, kind: 'product', record_id: 'p', entry: '{"id" : "1", "kind" : "product"}' },
      { seq: 2, kind: 'product', record_id: 'q', entry: '{"id" : "2", "kind" : "product"}' },
    ];
    const meta = { next_cursor: 'c', has_more: false };
    expect(JSON.parse(feedPageJson(rows, undefined, meta))).toEqual({
      data: [
        { id: '1', kind: 'product' },
        { id: '2', kind: 'product' },
      ],
      meta,
    });
    expect(JSON.parse(feedPageJson(rows, [{ id: 'p' }, null], meta)).data).toEqual([
      { id: '1', kind: 'product', record: { id: 'p' } },
      { id: '2', kind: 'product', record: null },
    ]);
    expect(JSON.parse(feedPageJson([], undefined, meta))).toEqual({ data: [], meta });
  });
});
