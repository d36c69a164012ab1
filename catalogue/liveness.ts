import { KINDS, type StoredKind } from './record-kinds.js';

/*
 * Which kinds of record a change may make live or not live by its effects,
 * which the worker applies after the change is stored (interface §5 and §6):
 * a write stubs what it names, a delete cascades to what points at the
 * record with `onParentDelete: 'cascade'`. Read off KINDS, so a new
 * reference or list is counted here without a word changed.
 */

/** Kinds a write of `kind` may stub: its stubbing references, every record its lists name, its line lists' products. */
export function kindsStubbedBy(kind: StoredKind): ReadonlySet<StoredKind> {
  const definition = KINDS[kind];
  return new Set<StoredKind>([
    ...definition.refs.filter((ref) => ref.stub).map((ref) => ref.kind),
    ...definition.lists.map((list) => list.kind),
    ...definition.stubLists.map((list) => list.kind),
  ]);
}

/** Kinds a delete of `kind` may take with it: records whose reference to it cascades, and theirs in turn. */
export function kindsCascadedFrom(kind: StoredKind): ReadonlySet<StoredKind> {
  const found = new Set<StoredKind>();
  const visit = (parent: StoredKind) => {
    for (const definition of Object.values(KINDS)) {
      const cascades = definition.refs.some((ref) => ref.kind === parent && ref.onParentDelete === 'cascade');
      if (cascades && !found.has(definition.kind)) {
        found.add(definition.kind);
        visit(definition.kind);
      }
    }
  };
  visit(kind);
  return found;
}
