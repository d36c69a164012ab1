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

/** A record a change names, by kind and id. */
export interface RecordRef {
  kind: StoredKind;
  id: string;
}

const idsIn = (value: unknown, path: 'self' | 'id'): string[] =>
  Array.isArray(value)
    ? value
        .map((item) => (path === 'self' ? item : (item as { id?: unknown } | null)?.id))
        .filter((id): id is string => typeof id === 'string')
    : [];

/**
 * The records a write of `kind` with this payload stubs when they do not
 * exist: those its stubbing references, its lists and its line lists name,
 * and a line write's product (not a removed line's).
 */
export function recordsStubbedBy(kind: StoredKind, payload: Record<string, unknown>): RecordRef[] {
  const definition = KINDS[kind];
  const found: RecordRef[] = [];
  for (const ref of definition.refs) {
    const id = payload[ref.field];
    if (ref.stub && typeof id === 'string') found.push({ kind: ref.kind, id });
  }
  for (const list of definition.lists) for (const id of idsIn(payload[list.field], 'self')) found.push({ kind: list.kind, id });
  for (const list of definition.stubLists) for (const id of idsIn(payload[list.field], list.path)) found.push({ kind: list.kind, id });
  const lineProduct = payload[LINE_PAYLOAD.product];
  if (typeof lineProduct === 'string' && payload[LINE_PAYLOAD.removed] !== true) found.push({ kind: 'product', id: lineProduct });
  return found;
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
