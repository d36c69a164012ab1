import { KINDS, LINE_PAYLOAD, type ListRelation, type StoredKind, TRACKED_FIELD, trackedValue } from '../catalogue/record-kinds.js';
import type { OutboxEntry } from './outbox.repository.js';

/** How many units applying `entry` costs at least (its own record and every id it names; deletes count 1). */
export function changeUnits(entry: OutboxEntry): number {
  if (entry.action !== 'upsert' || !(entry.kind in KINDS)) return 1;
  return upsertUnits(upsertSteps(entry.kind as StoredKind, entry.payload));
}

/** changeUnits of an upsert whose steps are known. */
export function upsertUnits(steps: readonly UpsertStep[]): number {
  let units = 1;
  for (const step of steps) units += step.ids.length * (step.list?.mode === 'replace' ? 2 : 1);
  return units;
}

const unique = (ids: string[]) => [...new Set(ids)];

/** One step of applying an upsert: stubs for `ids`, and with `list` that list's links (or point-at children). */
export interface UpsertStep {
  kind: StoredKind;
  ids: string[];
  list?: ListRelation;
}

/**
 * The records an upsert names, in the order applying it visits them (and so
 * the order of its audit entries): single references, stub lists, then each
 * list sent. Shared by the one-by-one and the set-based applier.
 */
export function upsertSteps(kind: StoredKind, payload: Record<string, unknown>): UpsertStep[] {
  const definition = KINDS[kind];
  const steps: UpsertStep[] = [];
  // A line write (records/record.service.ts putLine) names the one product it adds.
  const lineProduct = payload[LINE_PAYLOAD.product];
  if (typeof lineProduct === 'string' && payload[LINE_PAYLOAD.removed] !== true) steps.push({ kind: 'product', ids: [lineProduct] });
  for (const ref of definition.refs) {
    const target = payload[ref.field];
    if (ref.stub && typeof target === 'string') steps.push({ kind: ref.kind, ids: [target] });
  }
  for (const list of definition.stubLists) {
    const value = payload[list.field] as Array<string | { id: string }> | null | undefined;
    steps.push({ kind: list.kind, ids: unique((value ?? []).map((item) => (typeof item === 'string' ? item : item.id))) });
  }
  for (const list of definition.lists) {
    if (payload[list.field] === undefined) continue;
    steps.push({ kind: list.kind, ids: unique((payload[list.field] as string[] | null) ?? []), list });
  }
  return steps;
}

/** The tracked reference an upsert sends (for the serial view), if it sends one. */
export function sentReference(kind: StoredKind, payload: Record<string, unknown>): { value: string | null } | undefined {
  const tracked = TRACKED_FIELD[kind];
  if (tracked === undefined || payload[tracked] === undefined) return undefined;
  const value = payload[tracked] as string | null;
  return { value: value === null ? null : trackedValue(kind, value) };
}
