import { describe, expect, it } from 'vitest';
import type { OutboxEntry } from './outbox.repository.js';
import { type Segment, splitIntoSegments } from './run.applier.js';

let seq = 0;
function change(kind: string, id: string, payload: Record<string, unknown> = {}, action: OutboxEntry['action'] = 'upsert'): OutboxEntry {
  seq += 1;
  return {
    seq,
    lang_key: 1,
    account_id: 1,
    language_id: 'nl',
    kind,
    action,
    record_id: id,
    payload: { id, ...payload },
    actor: 'client',
    request_id: null,
    accepted_at: '2026-01-01T00:00:00.000Z',
    progress: null,
  };
}

/** A segment as `run:P1,P2` (set-based) or `one:P3` (one by one), for readable expectations. */
const shape = (segments: Segment[]) =>
  segments.map((segment) =>
    segment.fast ? `run:${segment.run.map(({ entry }) => entry.record_id).join(',')}` : `one:${segment.entry.record_id}`,
  );

describe('when a batch of changes is split into runs', () => {
  it('should put consecutive upserts of one kind and distinct records in one run', () => {
    const batch = [
      change('product', 'P1', { category_ids: ['C1'] }),
      change('product', 'P2', { category_ids: ['C1', 'C2'] }),
      change('product', 'P3'),
    ];
    expect(shape(splitIntoSegments(batch))).toEqual(['run:P1,P2,P3']);
  });

  it('should end a run at a change of another kind', () => {
    const batch = [change('product', 'P1'), change('product', 'P2'), change('category', 'C9'), change('category', 'C8')];
    expect(shape(splitIntoSegments(batch))).toEqual(['run:P1,P2', 'run:C9,C8']);
  });

  it('should end a run before a record that is already in it', () => {
    const batch = [change('product', 'P1'), change('product', 'P2'), change('product', 'P1')];
    expect(shape(splitIntoSegments(batch))).toEqual(['run:P1,P2', 'one:P1']);
  });

  it('should end a run before a change that writes a record an earlier change of the run named', () => {
    // P1 names P2 as related: one by one P2 is stubbed first and then written, so P2 cannot join P1's run.
    const batch = [change('product', 'P1', { relevant_product_ids: ['P2'] }), change('product', 'P2'), change('product', 'P3')];
    expect(shape(splitIntoSegments(batch))).toEqual(['one:P1', 'run:P2,P3']);
  });

  it('should let a change name a record written earlier in the run', () => {
    const batch = [change('product', 'P1'), change('product', 'P2', { relevant_product_ids: ['P1'] })];
    expect(shape(splitIntoSegments(batch))).toEqual(['run:P1,P2']);
  });

  it('should apply point-at lists, deletes, assignments and languages one by one', () => {
    const batch = [
      change('product', 'P1'),
      change('product', 'P2'),
      change('product', 'P3', { variant_ids: ['V1'] }),
      change('product', 'P4'),
      change('product', 'P5'),
      change('product', 'P6', {}, 'delete'),
      change('product', 'P7', { category_id: 'C1' }, 'assign'),
      change('language', 'nl'),
      change('brand', 'B1', { product_ids: ['P1'] }),
    ];
    expect(shape(splitIntoSegments(batch))).toEqual(['run:P1,P2', 'one:P3', 'run:P4,P5', 'one:P6', 'one:P7', 'one:nl', 'one:B1']);
  });

  it('should apply a lone upsert one by one', () => {
    expect(shape(splitIntoSegments([change('variant', 'V1', { product_id: 'P1' })]))).toEqual(['one:V1']);
    expect(splitIntoSegments([])).toEqual([]);
  });

  it('should keep every change exactly once and in sequence order', () => {
    const kinds = ['product', 'category', 'variant'];
    const batch = Array.from({ length: 200 }, (_, index) =>
      change(kinds[index % 3]!, `R${index % 17}`, index % 5 === 0 ? { category_ids: [`R${(index * 7) % 17}`] } : {}),
    );
    const order = splitIntoSegments(batch).flatMap((segment) =>
      segment.fast ? segment.run.map(({ entry }) => entry.seq) : [segment.entry.seq],
    );
    expect(order).toEqual(batch.map((entry) => entry.seq));
  });
});
