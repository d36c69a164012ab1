import type { DatabaseTransactionConnection } from 'slonik';
import { KINDS, LINK_WRITERS, type ListRelation, type StoredKind, TRACKED_FIELD, trackedValue } from '../catalogue/record-kinds.js';
import {
  type AuditEntry,
  backdateCreation,
  insertStub,
  lockRow,
  markWritten,
  type OutboxEntry,
  projectDelete,
  projectFields,
  type RecordKey,
  removeLinks,
  replaceLinks,
  reviveAsStub,
  serialChildren,
  serialLiveIds,
  setLink,
  setSerialState,
} from './applier.repository.js';

type Tx = DatabaseTransactionConnection;

export const SYSTEM = 'system';

/** The audit entry of a change made while applying `entry` (numbered and timed as the entry). */
export function auditOf(
  entry: OutboxEntry,
  kind: string,
  recordId: string,
  action: string,
  actor: string,
  changes: Record<string, unknown>,
): AuditEntry {
  return {
    account_id: entry.account_id,
    lang_key: entry.lang_key,
    language_id: entry.language_id,
    kind,
    record_id: recordId,
    action,
    actor,
    request_id: entry.request_id,
    write_seq: entry.seq,
    at: entry.accepted_at,
    changes,
  };
}

/**
 * Applies one outbox entry's effects as if it ran alone at its sequence
 * number. Entries of a language arrive strictly in sequence order, so the
 * serial columns (`w_live`, `w_ref`, links) always show the state just before
 * this entry; the API view, which may already hold later writes, is updated
 * only where no later write touched it (see docs/consistency.md).
 */
export class EntryApplier {
  readonly audits: AuditEntry[] = [];

  constructor(
    private readonly tx: Tx,
    private readonly entry: OutboxEntry,
  ) {}

  private key(kind: string, id: string): RecordKey {
    return { langKey: this.entry.lang_key, kind, id };
  }

  private audit(kind: string, recordId: string, action: string, actor: string, changes: Record<string, unknown>) {
    this.audits.push(auditOf(this.entry, kind, recordId, action, actor, changes));
  }

  async apply(): Promise<void> {
    const { kind, action, record_id: id, payload, actor } = this.entry;
    if (kind === 'language') {
      const { created, ...changes } = payload;
      this.audit('language', id, action === 'delete' ? 'delete' : created ? 'create' : 'update', actor, action === 'delete' ? {} : changes);
      return;
    }
    if (action === 'upsert') await this.applyUpsert(kind as StoredKind, id, payload);
    else if (action === 'delete') await this.applyDelete(kind as StoredKind, id);
    else await this.applyLink(id, payload, action === 'assign');
  }

  private async applyUpsert(kind: StoredKind, id: string, payload: Record<string, unknown>) {
    const seq = this.entry.seq;
    const existed = await markWritten(this.tx, this.key(kind, id), sentReference(kind, payload));
    const { id: _id, ...changes } = payload;
    this.audit(kind, id, existed ? 'update' : 'create', this.entry.actor, changes);

    for (const step of upsertSteps(kind, payload)) {
      if (step.list?.mode === 'point-at') {
        for (const child of step.ids) {
          await this.ensureStub(step.kind, child, { [step.list.childField]: id });
          await this.pointAt(step.kind, child, step.list.childField, id);
        }
        continue;
      }
      await this.ensureStubs(step.kind, step.ids);
      if (!step.list) continue;
      const { removed, added } = await replaceLinks(this.tx, this.entry.lang_key, step.list.rel, step.list.side, id, step.ids, seq);
      for (const other of removed) this.audit(kind, id, 'unlink', SYSTEM, { [step.list.field]: other });
      for (const other of added) this.audit(kind, id, 'link', SYSTEM, { [step.list.field]: other });
    }
    const fansOut = KINDS[kind].fansOut;
    if (fansOut) await this.fanOut(fansOut.kind, fansOut.field, id, payload[fansOut.field]);
  }

  /**
   * A global unsubscribe (V2-SURFACE 4): every profile that has the email at
   * this point of the serial order gets the value, unless a later write of
   * the profile set that field; one audit entry per profile.
   */
  private async fanOut(kind: StoredKind, field: string, email: string, value: unknown) {
    for (const profile of await serialChildren(this.tx, this.entry.lang_key, kind, email)) {
      await projectFields(this.tx, this.key(kind, profile), { [field]: value }, this.entry.seq);
      this.audit(kind, profile, 'update', SYSTEM, { [field]: value });
    }
  }

  private async applyDelete(kind: StoredKind, id: string) {
    const key = this.key(kind, id);
    const row = await lockRow(this.tx, key);
    // Already gone at this point of the serial order (a cascade got there first): nothing changes.
    if (!row?.w_live) return;
    await setSerialState(this.tx, key, false, null);
    this.audit(kind, id, 'delete', this.entry.actor, {});
    const langKey = this.entry.lang_key;
    switch (kind) {
      case 'product': {
        for (const variant of await serialChildren(this.tx, langKey, 'variant', id)) await this.cascadeDelete('variant', variant);
        for (const category of await removeLinks(this.tx, langKey, 'product_category', 'a', id)) {
          this.audit('product', id, 'unlink', SYSTEM, { category_ids: category });
        }
        for (const related of await removeLinks(this.tx, langKey, 'relevant', 'a', id)) {
          this.audit('product', id, 'unlink', SYSTEM, { relevant_product_ids: related });
        }
        for (const owner of await removeLinks(this.tx, langKey, 'relevant', 'b', id)) {
          this.audit('product', owner, 'unlink', SYSTEM, { relevant_product_ids: id });
        }
        break;
      }
      case 'category': {
        for (const product of await removeLinks(this.tx, langKey, 'product_category', 'b', id)) {
          this.audit('category', id, 'unlink', SYSTEM, { product_ids: product });
        }
        for (const child of await serialChildren(this.tx, langKey, 'category', id))
          await this.setNull('category', child, 'parent_category_id');
        break;
      }
      case 'brand': {
        for (const product of await serialChildren(this.tx, langKey, 'product', id)) await this.setNull('product', product, 'brand_id');
        break;
      }
      default:
        break;
    }
  }

  /**
   * A v2 link writer (an assignment or a related product): the API checked
   * that both records existed in its view; the link appears only if both
   * still exist at this point of the serial order.
   */
  private async applyLink(productId: string, payload: Record<string, unknown>, present: boolean) {
    const link = Object.values(LINK_WRITERS).find((writer) => typeof payload[writer.payloadKey] === 'string');
    if (!link) throw new Error(`link change without a target: ${JSON.stringify(payload)}`);
    const otherId = payload[link.payloadKey] as string;
    const product = await lockRow(this.tx, this.key('product', productId));
    const other = await lockRow(this.tx, this.key(link.kind, otherId));
    if (present && !(product?.w_live && other?.w_live)) return;
    const changed = await setLink(this.tx, this.entry.lang_key, link.rel, productId, otherId, present, this.entry.seq);
    if (changed) this.audit('product', productId, present ? 'link' : 'unlink', this.entry.actor, { [link.field]: otherId });
  }

  /** ensureStub for a list of ids, checking the usual case (all exist) in one statement. */
  private async ensureStubs(kind: StoredKind, ids: string[]) {
    const live = await serialLiveIds(this.tx, this.entry.lang_key, kind, ids);
    for (const id of ids) if (!live.has(id)) await this.ensureStub(kind, id, {});
  }

  /** Creates `kind`/`id` as a stub unless it exists at this point of the serial order. */
  async ensureStub(kind: StoredKind, id: string, requested: Record<string, unknown>) {
    const seq = this.entry.seq;
    const key = this.key(kind, id);
    let row = await lockRow(this.tx, key);
    if (row?.w_live) return;
    // A stub holds only its id, plus the parent that named it when a point-at list created it.
    const fields: Record<string, unknown> = { ...requested };
    const tracked = TRACKED_FIELD[kind];
    const ref = tracked ? ((fields[tracked] as string | undefined) ?? null) : null;
    const at = this.entry.accepted_at;
    // An API write of the same id may insert the row between the lock and the insert: then it is a row like any other.
    if (!row && !(await insertStub(this.tx, key, fields, seq, at, ref))) row = await lockRow(this.tx, key);
    if (row) {
      await setSerialState(this.tx, key, true, ref);
      if (!row.live) {
        await reviveAsStub(this.tx, key, fields, seq, at);
      } else {
        // The API already holds a later create of this id: the stub came first.
        await backdateCreation(this.tx, key, seq, at);
        await projectFields(this.tx, key, fields, seq);
      }
    }
    this.audit(kind, id, 'stub', SYSTEM, fields);
  }

  /** Point-at list: the child's reference field now names the writer. */
  private async pointAt(kind: StoredKind, id: string, field: string, parent: string) {
    const key = this.key(kind, id);
    const row = await lockRow(this.tx, key);
    if (!row) return;
    const tracked = TRACKED_FIELD[kind] === field;
    if (tracked && row.w_ref === parent) return;
    if (tracked) await setSerialState(this.tx, key, true, parent);
    await projectFields(this.tx, key, { [field]: parent }, this.entry.seq);
    this.audit(kind, id, 'link', SYSTEM, { [field]: parent });
  }

  private async setNull(kind: StoredKind, id: string, field: string) {
    const key = this.key(kind, id);
    await setSerialState(this.tx, key, true, null);
    await projectFields(this.tx, key, { [field]: null }, this.entry.seq);
    this.audit(kind, id, 'unlink', SYSTEM, { [field]: null });
  }

  private async cascadeDelete(kind: StoredKind, id: string) {
    const key = this.key(kind, id);
    await lockRow(this.tx, key);
    await setSerialState(this.tx, key, false, null);
    await projectDelete(this.tx, key, this.entry.seq);
    this.audit(kind, id, 'cascade_delete', SYSTEM, {});
  }
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
  const lineProduct = payload['line_product_id'];
  if (typeof lineProduct === 'string' && payload['line_removed'] !== true) steps.push({ kind: 'product', ids: [lineProduct] });
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
