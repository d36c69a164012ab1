import { KINDS, type StoredKind } from './record-kinds.js';

/*
 * What the worker does when a record is deleted (interface §6), read off
 * KINDS, in the order it is applied and audited: the records whose reference
 * cascades are deleted with it; then its many-to-many links are removed,
 * relation by relation in name order, those of its own lists before those by
 * which other records list it; then the references that are set to null.
 */

/** Records of `kind` whose `field` names the deleted record. */
export interface ChildrenEffect {
  type: 'children';
  kind: StoredKind;
  field: string;
  effect: 'cascade' | 'set-null';
}

/**
 * The deleted record's links in `rel` with it on `side`, each audited as an
 * unlink of `auditKind`'s list `field`: the deleted record's own list
 * (`audited: 'deleted'`), or the other record's list naming it (`'other'`).
 */
export interface LinksEffect {
  type: 'links';
  rel: 'product_category' | 'relevant';
  side: 'a' | 'b';
  auditKind: StoredKind;
  field: string;
  audited: 'deleted' | 'other';
}

export type DeleteEffect = ChildrenEffect | LinksEffect;

const otherSide = (side: 'a' | 'b') => (side === 'a' ? 'b' : 'a');

export function deleteEffectsOf(kind: StoredKind): DeleteEffect[] {
  const children = (effect: ChildrenEffect['effect']): ChildrenEffect[] =>
    Object.values(KINDS).flatMap((definition) =>
      definition.refs
        .filter((ref) => ref.kind === kind && ref.onParentDelete === effect)
        .map((ref) => ({ type: 'children' as const, kind: definition.kind, field: ref.field, effect })),
    );
  const links: LinksEffect[] = [];
  const detached = new Set<string>();
  const byRel = (x: { rel: string }, y: { rel: string }) => (x.rel < y.rel ? -1 : x.rel > y.rel ? 1 : 0);
  for (const list of KINDS[kind].lists.flatMap((list) => (list.mode === 'replace' ? [list] : [])).sort(byRel)) {
    detached.add(`${list.rel}:${list.side}`);
    links.push({ type: 'links', rel: list.rel, side: list.side, auditKind: kind, field: list.field, audited: 'deleted' });
  }
  for (const definition of Object.values(KINDS)) {
    for (const list of definition.lists) {
      if (list.mode !== 'replace' || list.kind !== kind) continue;
      // The record is on the side opposite the lister's; a link its own list already removed is not removed twice.
      const side = otherSide(list.side);
      if (detached.has(`${list.rel}:${side}`)) continue;
      detached.add(`${list.rel}:${side}`);
      links.push({ type: 'links', rel: list.rel, side, auditKind: definition.kind, field: list.field, audited: 'other' });
    }
  }
  return [
    ...children('cascade'),
    ...links.filter((x) => x.audited === 'deleted'),
    ...links.filter((x) => x.audited === 'other').sort(byRel),
    ...children('set-null'),
  ];
}
