import type { DatabaseTransactionConnection } from 'slonik';
import { deleteEffectsOf } from '../catalogue/delete-effects.js';
import { KINDS, LINK_WRITERS, type StoredKind, TRACKED_FIELD } from '../catalogue/record-kinds.js';
import {
  cascadeDeleteMany,
  lockRow,
  markWritten,
  moveSerialRefs,
  projectFieldsMany,
  type RecordKey,
  serialChildrenPage,
  serialStates,
  setNullMany,
  setSerialState,
} from './applier.repository.js';
import type { AuditEntry } from './audit.repository.js';
import { changeUnits, sentReference, upsertSteps } from './change-plan.js';
import { ERASE_ACTION } from './erasure.applier.js';
import { erasurePhases } from './erasure.phases.js';
import { linkMany, linksPage, setLink, unlinkMany } from './links.repository.js';
import type { ChangeProgress, OutboxEntry } from './outbox.repository.js';
import { byOffset, type Cursor, draining, ONE, type Phase } from './phase.js';
import { EMPTY_STUB, insertStubsMany, type StubContent, stubOutsideSerialView, targetKey } from './stubs.repository.js';

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

/** What one transaction did of a change: all of it, or up to `progress` (the rest follows in later transactions). */
export type ChangeOutcome = { done: true; used: number } | { done: false; used: number; progress: ChangeProgress };

/**
 * Applies one outbox entry's effects as if it ran alone at its sequence
 * number. Entries of a language arrive strictly in sequence order, so the
 * serial columns (`w_live`, `w_ref`, links) always show the state just before
 * this entry; the API view, which may already hold later writes, is updated
 * only where no later write touched it (see docs/consistency.md).
 *
 * Effects are applied set-based, and at most `budget` units (ids stubbed,
 * linked, unlinked, cascaded or detached) per call: a change naming 100,000
 * categories, or a delete detaching 100,000 products, is applied over several
 * transactions, each resuming at the entry's `progress` (stored in the outbox
 * row with the slice's effects), while the language's later changes wait.
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

  /** Applies the entry from where it was left, at most `budget` units (every phase costs at least one). */
  async apply(budget: number): Promise<ChangeOutcome> {
    const phases = this.phases();
    const start = this.entry.progress ?? { phase: 0, offset: 0 };
    let phase = start.phase;
    let cursor: Cursor = { offset: start.offset, ...(start.after === undefined ? {} : { after: start.after }) };
    let used = 0;
    while (phase < phases.length) {
      if (used >= budget) return { done: false, used, progress: { phase, ...cursor } };
      const step = await phases[phase]!(cursor, budget - used);
      used += Math.max(step.count, 1);
      if (step.stop) break;
      if (step.complete) {
        phase += 1;
        cursor = { offset: 0 };
        // A change that will not fit commits its own record's step alone: the API may be writing that record again,
        // and it waits for this transaction. The lists follow in slices that lock only the records they name.
        if (phase === 1 && phases.length > 1 && changeUnits(this.entry) > budget)
          return { done: false, used, progress: { phase, offset: 0 } };
      } else {
        cursor = { offset: cursor.offset + step.count, ...(step.after === undefined ? {} : { after: step.after }) };
      }
    }
    return { done: true, used };
  }

  private phases(): Phase[] {
    const { kind, action, record_id: id, payload, actor } = this.entry;
    if (kind === 'language') {
      return [
        async () => {
          const { created, ...changes } = payload;
          this.audit(
            'language',
            id,
            action === 'delete' ? 'delete' : created ? 'create' : 'update',
            actor,
            action === 'delete' ? {} : changes,
          );
          return ONE;
        },
      ];
    }
    if (action === ERASE_ACTION) return erasurePhases(this.tx, this.entry, (...entry) => this.audit(...entry));
    if (action === 'upsert') return this.upsertPhases(kind as StoredKind, id, payload);
    if (action === 'delete') return this.deletePhases(kind as StoredKind, id);
    return [
      async () => {
        await this.applyLink(id, payload, action === 'assign');
        return ONE;
      },
    ];
  }

  private upsertPhases(kind: StoredKind, id: string, payload: Record<string, unknown>): Phase[] {
    const { tx, entry } = this;
    const langKey = entry.lang_key;
    const phases: Phase[] = [
      async () => {
        const existed = await markWritten(tx, this.key(kind, id), sentReference(kind, payload));
        const { id: _id, ...changes } = payload;
        this.audit(kind, id, existed ? 'update' : 'create', entry.actor, changes);
        return ONE;
      },
    ];
    for (const step of upsertSteps(kind, payload)) {
      const list = step.list;
      if (list?.mode === 'point-at') {
        phases.push(byOffset(step.ids, (slice) => this.pointAt(step.kind, list.childField, id, slice)));
        continue;
      }
      phases.push(
        byOffset(step.ids, async (slice) => {
          const stubbed = await this.ensureStubs(step.kind, slice, EMPTY_STUB);
          for (const target of slice) if (stubbed.has(target)) this.audit(step.kind, target, 'stub', SYSTEM, {});
        }),
      );
      if (!list) continue;
      let keep: Set<string> | undefined;
      phases.push(
        // The writer's links, page by page, each one not in the list removed.
        async ({ after }, limit) => {
          keep ??= new Set(step.ids);
          const page = await linksPage(tx, langKey, list.rel, list.side, id, after ?? null, limit);
          const removed = page.filter((other) => !keep!.has(other));
          await unlinkMany(tx, langKey, list.rel, list.side, id, removed);
          for (const other of removed) this.audit(kind, id, 'unlink', SYSTEM, { [list.field]: other });
          const last = page.at(-1);
          return { count: page.length, complete: page.length < limit, ...(last === undefined ? {} : { after: last }) };
        },
        byOffset(step.ids, async (slice) => {
          const added = await linkMany(tx, langKey, list.rel, list.side, id, slice, entry.seq);
          for (const other of slice) if (added.has(other)) this.audit(kind, id, 'link', SYSTEM, { [list.field]: other });
        }),
      );
    }
    const fansOut = KINDS[kind].fansOut;
    if (fansOut) {
      // A global unsubscribe (interface §16): every profile that has the email at this point of the serial order gets
      // the value, unless a later write of the profile set that field; one audit entry per profile.
      const changes = { [fansOut.field]: payload[fansOut.field] };
      phases.push(async ({ after }, limit) => {
        const profiles = await serialChildrenPage(tx, langKey, fansOut.kind, id, after ?? null, limit);
        await projectFieldsMany(tx, langKey, fansOut.kind, profiles, changes, entry.seq);
        for (const profile of profiles) this.audit(fansOut.kind, profile, 'update', SYSTEM, changes);
        const last = profiles.at(-1);
        return { count: profiles.length, complete: profiles.length < limit, ...(last === undefined ? {} : { after: last }) };
      });
    }
    return phases;
  }

  private deletePhases(kind: StoredKind, id: string): Phase[] {
    const { tx, entry } = this;
    const langKey = entry.lang_key;
    const phases: Phase[] = [
      async () => {
        const key = this.key(kind, id);
        const row = await lockRow(tx, key);
        // Already gone at this point of the serial order (a cascade got there first): nothing changes.
        if (!row?.w_live) return { ...ONE, stop: true };
        await setSerialState(tx, key, false, null);
        this.audit(kind, id, 'delete', entry.actor, {});
        return ONE;
      },
    ];
    /** Removes `id`'s links on one side, auditing each with `audit(other)`. */
    const detach = (rel: string, side: 'a' | 'b', audit: (other: string) => void) =>
      draining(async (limit) => {
        const others = await linksPage(tx, langKey, rel, side, id, null, limit);
        await unlinkMany(tx, langKey, rel, side, id, others);
        for (const other of others) audit(other);
        return others.length;
      });
    /** Children whose serial reference names `id`: cascade-deleted, or their reference `field` set to null. */
    const children = (childKind: StoredKind, effect: 'cascade' | { setNull: string }) =>
      draining(async (limit) => {
        // Each slice takes their reference away, so the next one starts from the first that is left.
        const ids = await serialChildrenPage(tx, langKey, childKind, id, null, limit);
        if (effect === 'cascade') {
          await cascadeDeleteMany(tx, langKey, childKind, ids, entry.seq);
          for (const child of ids) this.audit(childKind, child, 'cascade_delete', SYSTEM, {});
        } else {
          await setNullMany(tx, langKey, childKind, ids, effect.setNull, entry.seq);
          for (const child of ids) this.audit(childKind, child, 'unlink', SYSTEM, { [effect.setNull]: null });
        }
        return ids.length;
      });
    for (const effect of deleteEffectsOf(kind)) {
      if (effect.type === 'children') {
        phases.push(children(effect.kind, effect.effect === 'cascade' ? 'cascade' : { setNull: effect.field }));
      } else if (effect.audited === 'deleted') {
        phases.push(detach(effect.rel, effect.side, (other) => this.audit(kind, id, 'unlink', SYSTEM, { [effect.field]: other })));
      } else {
        phases.push(
          detach(effect.rel, effect.side, (owner) => this.audit(effect.auditKind, owner, 'unlink', SYSTEM, { [effect.field]: id })),
        );
      }
    }
    return phases;
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

  /**
   * Creates as stubs the records of `ids` that do not exist at this point of
   * the serial order. Returns those (the caller audits them in list order).
   */
  private async ensureStubs(kind: StoredKind, ids: readonly string[], content: StubContent): Promise<Set<string>> {
    const { tx, entry } = this;
    const states = await serialStates(tx, entry.lang_key, kind, ids);
    const missing = ids.filter((id) => states.get(id)?.w_live !== true);
    if (missing.length === 0) return new Set();
    const target = (id: string) => ({ kind, id, seq: entry.seq, at: entry.accepted_at });
    const inserted = await insertStubsMany(tx, entry.lang_key, missing.filter((id) => !states.has(id)).map(target), content);
    // Tombstones, rows the API created ahead of the queue, and rows an API write inserted just now.
    const outside = missing.filter((id) => !inserted.has(targetKey(kind, id)));
    await stubOutsideSerialView(tx, entry.lang_key, outside.map(target), content);
    return new Set(missing);
  }

  /** Point-at list: each child is stubbed (naming the writer) or its reference field now names the writer. */
  private async pointAt(kind: StoredKind, field: string, parent: string, ids: readonly string[]) {
    const { tx, entry } = this;
    const fields = { [field]: parent };
    const tracked = TRACKED_FIELD[kind] === field;
    const stubbed = await this.ensureStubs(kind, ids, { fields, ref: tracked ? parent : null });
    // A stub already names the writer serially; an untracked field is written (and audited) whatever it held.
    const moved = tracked
      ? await moveSerialRefs(
          tx,
          entry.lang_key,
          kind,
          ids.filter((id) => !stubbed.has(id)),
          parent,
        )
      : new Set(ids);
    await projectFieldsMany(tx, entry.lang_key, kind, [...moved], fields, entry.seq);
    for (const id of ids) {
      if (stubbed.has(id)) this.audit(kind, id, 'stub', SYSTEM, fields);
      if (moved.has(id)) this.audit(kind, id, 'link', SYSTEM, fields);
    }
  }
}
