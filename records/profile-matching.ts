/*
 * Which profile a written profile is (the profile rule, interface §4.5): by
 * id, then by email, against a directory of the language's profiles.
 */
import type { CommonQueryMethods } from 'slonik';
import { ValidationError } from '../platform/errors.js';
import { findLiveRecord, findProfileByEmail } from './record.repository.js';

/**
 * Where the profile rule (interface §4.5) looks profiles up: the language's profiles in the
 * database, or a bulk batch's view of them (bulk/batch-profiles.ts).
 */
export interface ProfileDirectory {
  /** Whether a live profile has this id. */
  isLive(id: string): Promise<boolean> | boolean;
  /** The id of the oldest live profile with this email, compared case-insensitively. */
  idByEmail(email: string): Promise<string | undefined> | string | undefined;
}

/** The language's profiles as the database has them now. */
export function databaseProfiles(db: CommonQueryMethods, langKey: number): ProfileDirectory {
  return {
    isLive: async (id) => (await findLiveRecord(db, langKey, 'profile', id)) !== null,
    idByEmail: async (email) => (await findProfileByEmail(db, langKey, email))?.id,
  };
}

/**
 * Applies the profile rule of interface §4.5: match by id, then by email
 * (case-insensitive), keeping the matched profile's id; a new profile needs both.
 * @throws {ValidationError} missing id or email for a profile that does not exist.
 */
export async function resolveProfileId(profiles: ProfileDirectory, input: Record<string, unknown>): Promise<string> {
  const id = input['id'] as string | undefined;
  const email = input['email'] as string | undefined;
  if (id === undefined && email === undefined) throw new ValidationError('missing_parameters', ['id', 'email']);
  if (id !== undefined && (await profiles.isLive(id))) return id;
  if (email !== undefined) {
    const match = await profiles.idByEmail(email);
    if (match !== undefined) return match;
  }
  const missing = [id === undefined && 'id', email === undefined && 'email'].filter((name): name is string => Boolean(name));
  if (missing.length > 0) throw new ValidationError('missing_parameters', missing);
  return id!;
}
