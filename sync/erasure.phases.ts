import type { DatabaseTransactionConnection } from 'slonik';
import {
  discardSetAsideOf,
  ERASE_ACTION,
  type ErasureTarget,
  emailDigest,
  eraseProfiles,
  eraseUnsubscribe,
  erasureTarget,
  markLanguageErased,
  profileOfId,
  profilesOfEmail,
  setAsideProfilesOfEmail,
} from './erasure.applier.js';
import type { OutboxEntry } from './outbox.repository.js';
import { draining, ONE, type Phase } from './phase.js';

type Tx = DatabaseTransactionConnection;

/** Records one audit entry of the change being applied (EntryApplier's). */
export type Audit = (kind: string, recordId: string, action: string, actor: string, changes: Record<string, unknown>) => void;

/** The actor of entries the worker makes on its own (change.applier.ts SYSTEM). */
const SYSTEM = 'system';

/**
 * An erasure (interface §24, sync/erasure.applier.ts): the profiles that
 * match at this point of the serial order are deleted, each with one `erase`
 * entry; then the email's global unsubscribe goes.
 */
export function erasurePhases(tx: Tx, entry: OutboxEntry, audit: Audit): Phase[] {
  let target: ErasureTarget | null | undefined;
  let email: string | null = null;
  const erase = async (ids: readonly string[]) => {
    await eraseProfiles(tx, entry, target!, email, ids);
    for (const profile of ids) audit('profile', profile, ERASE_ACTION, entry.actor, {});
    for (const gone of await discardSetAsideOf(tx, entry, 'profile', ids))
      audit('profile', gone.record_id, 'discard', SYSTEM, gone.changes);
  };
  /** The email's profiles of one view, a slice at a time: each slice erases the ones before. */
  const byEmail = (find: typeof profilesOfEmail) =>
    draining(async (limit) => {
      target ??= await erasureTarget(tx, entry);
      if (!target?.email || target.profileId !== null) return 0;
      email = target.email;
      const ids = await find(tx, entry, target.email, limit);
      await erase(ids);
      return ids.length;
    });
  return [
    async () => {
      target = await erasureTarget(tx, entry);
      if (!target) return { ...ONE, stop: true };
      email = target.email;
      const profile = await profileOfId(tx, entry, target);
      if (profile) {
        email = profile.email;
        await erase([profile.id]);
      }
      return ONE;
    },
    byEmail(profilesOfEmail),
    // Profiles the API shows whose own change was set aside: never in the serial view, but still a copy.
    byEmail(setAsideProfilesOfEmail),
    async () => {
      target ??= await erasureTarget(tx, entry);
      if (!target) return ONE;
      email ??= target.email;
      if (email !== null) {
        const digest = await emailDigest(tx, email);
        if (await eraseUnsubscribe(tx, entry, email)) audit('global_unsubscribe', digest, 'delete', entry.actor, {});
        for (const gone of await discardSetAsideOf(tx, entry, 'global_unsubscribe', [email]))
          audit('global_unsubscribe', digest, 'discard', SYSTEM, gone.changes);
      }
      await markLanguageErased(tx, entry, target);
      return ONE;
    },
  ];
}
