import type { CommonQueryMethods } from 'slonik';
import type { ProfileDirectory } from '../records/profile-matching.js';
import { findMatchableProfiles } from '../records/record.repository.js';
import type { PreparedWrite } from '../records/record.service.js';

/** What a bulk batch knows of one live profile: its email in lower case (null without one) and its place by age. */
interface KnownProfile {
  email: string | null;
  age: number;
}

/** The ids and emails a block of profile lines may look up (profileCandidates). */
export interface ProfileCandidates {
  ids: ReadonlySet<string>;
  emails: ReadonlySet<string>;
}

/**
 * The ids and emails profile write bodies (`{"profile": {...}}`) send, as
 * the profile rule (interface §4.5) will look them up: an id as text (a number's too), an email as sent.
 * Bodies that are not records, and values of other types, name nothing.
 */
export function profileCandidates(bodies: Iterable<unknown>): ProfileCandidates {
  const ids = new Set<string>();
  const emails = new Set<string>();
  for (const body of bodies) {
    const profile = (body as Record<string, unknown>)['profile'];
    if (profile === null || typeof profile !== 'object' || Array.isArray(profile)) continue;
    const { id, email } = profile as Record<string, unknown>;
    if (typeof id === 'string' || typeof id === 'number') ids.add(String(id));
    if (typeof email === 'string') emails.add(email);
  }
  return { ids, emails };
}

/**
 * Profiles a batch creates are younger than every profile it found: their
 * numbers are taken after the lookup. Counted from here, in line order.
 */
const FIRST_NEW_AGE = 2 ** 52;

/**
 * A bulk batch's view of its language's profiles, for the profile rule (interface §4.5: match by id,
 * then by email, the oldest first) over a block of consecutive profile lines
 * (docs/consistency.md, "Profile lines in runs"). One lookup at the block's
 * start gives every live profile that any line of the block can name; each
 * write of the block is then taken into the view as the database would take
 * it (live from then on, and an email sent replaces the one it had), so a line
 * matches exactly what it would match had the lines before it been stored one
 * by one. A profile's writes change no other profile, so nothing else moves
 * the view while the block lasts; whatever else a batch does ends the block.
 *
 * Asked about an id or email that was not among the block's candidates, it
 * throws: the batch then goes line by line, each line looked up alone.
 */
export class BatchProfiles implements ProfileDirectory {
  private readonly byId = new Map<string, KnownProfile>();
  /** Lower-case email to the ids of the live profiles that have it. */
  private readonly byEmail = new Map<string, Set<string>>();
  private nextAge = FIRST_NEW_AGE;

  constructor(
    private readonly candidates: ProfileCandidates,
    /** Each candidate email as Postgres' lower() turns it. */
    private readonly lowered: ReadonlyMap<string, string>,
    found: ReadonlyArray<{ id: string; email: string | null; created_seq: number }>,
  ) {
    for (const profile of found) this.remember(profile.id, { email: profile.email, age: profile.created_seq });
  }

  static async load(db: CommonQueryMethods, langKey: number, candidates: ProfileCandidates): Promise<BatchProfiles> {
    const { lowered, profiles } = await findMatchableProfiles(db, langKey, [...candidates.ids], [...candidates.emails]);
    return new BatchProfiles(candidates, lowered, profiles);
  }

  isLive(id: string): boolean {
    if (!this.candidates.ids.has(id)) throw new Error(`profile id ${JSON.stringify(id)} is not among the block's candidates`);
    return this.byId.has(id);
  }

  idByEmail(email: string): string | undefined {
    let oldest: string | undefined;
    let oldestAge = Number.POSITIVE_INFINITY;
    for (const id of this.byEmail.get(this.lowerCase(email)) ?? []) {
      const { age } = this.byId.get(id)!;
      if (age < oldestAge) {
        oldest = id;
        oldestAge = age;
      }
    }
    return oldest;
  }

  /** Takes a write of the block into the view: its profile is live, with the email it sent or the one it kept. */
  wrote(write: PreparedWrite): void {
    const known = this.byId.get(write.id);
    const sent = write.fields['email'];
    const email = sent === undefined ? (known?.email ?? null) : typeof sent === 'string' ? this.lowerCase(sent) : null;
    this.forget(write.id);
    this.remember(write.id, { email, age: known?.age ?? this.nextAge++ });
  }

  private lowerCase(email: string): string {
    const lower = this.lowered.get(email);
    if (lower === undefined) throw new Error(`profile email ${JSON.stringify(email)} is not among the block's candidates`);
    return lower;
  }

  private remember(id: string, profile: KnownProfile): void {
    this.byId.set(id, profile);
    if (profile.email === null) return;
    let ids = this.byEmail.get(profile.email);
    if (!ids) {
      ids = new Set();
      this.byEmail.set(profile.email, ids);
    }
    ids.add(id);
  }

  private forget(id: string): void {
    const known = this.byId.get(id);
    if (!known) return;
    this.byId.delete(id);
    if (known.email !== null) this.byEmail.get(known.email)?.delete(id);
  }
}
