import { KINDS, LINE_PAYLOAD, type StoredKind } from './record-kinds.js';

/*
 * Which kinds of record a change may make live or not live by its effects,
 * which the worker applies after the change is stored (interface §5 and §6):
 * a write stubs what it names, a delete cascades to what points at the
 * record with `onParentDelete: 'cascade'`. Read off KINDS, so a new
 * reference or list is counted here without a word changed.
 */

/**
 * Kinds a write of `kind` may stub: those of its stubbing references, of
 * every record its lists name, of its line lists' products, and the product
 * of a line write (not of a line removed). With `named` (the fields its change names with a value),
 * only those it names; without, every one it could.
 */
export function kindsStubbedBy(kind: StoredKind, named?: ReadonlySet<string>): ReadonlySet<StoredKind> {
  const definition = KINDS[kind];
  const names = (field: string) => !named || named.has(field);
  const stubbed = new Set<StoredKind>([
    ...definition.refs.filter((ref) => ref.stub && names(ref.field)).map((ref) => ref.kind),
    ...definition.lists.filter((list) => names(list.field)).map((list) => list.kind),
    ...definition.stubLists.filter((list) => names(list.field)).map((list) => list.kind),
  ]);
  if (named?.has(LINE_PAYLOAD.product) && !named.has(LINE_PAYLOAD.removed)) stubbed.add('product');
  return stubbed;
}

/**
 * The fields of a change's payload that carry a value: a reference or a list
 * that names something (sync/pending-changes.repository.ts reads the same off
 * the outbox in SQL).
 */
export function namedFields(payload: Record<string, unknown>): ReadonlySet<string> {
  return new Set(
    Object.entries(payload)
      .filter(([, value]) => value !== null && value !== '' && !(Array.isArray(value) && value.length === 0))
      .map(([field]) => field),
  );
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
