import { type CommonQueryMethods, type DatabasePool, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';

/*
 * The advisory locks of the sync protocol, called from TypeScript. The lock
 * classes and the SQL helpers are defined once, in sync/sql/locks.sql (the
 * write functions in sync/sql call the same helpers); see
 * docs/consistency.md, "Safe horizon", for why each lock is taken where it is.
 */

/**
 * Holds the language's shared lock until commit. Every writer takes it
 * before its write number, so a language delete (exclusive) waits for writes
 * in flight, and the applier's horizon knows that every number taken before
 * it asked is committed or aborted once it gets the lock.
 */
export async function holdLanguageForWrite(tx: DatabaseTransactionConnection, langKey: number): Promise<void> {
  await tx.query(sql.unsafe`SELECT sync_lock_language_shared(${langKey})`);
}

/** The language's lock, exclusive: held to the end of the transaction the statement runs in. */
const lockLanguageExclusively = (langKey: number) => sql.unsafe`SELECT sync_lock_language_exclusive(${langKey})`;

/** Holds the language exclusively until commit: no writer of it is in flight (a language delete). */
export async function holdLanguageExclusively(tx: DatabaseTransactionConnection, langKey: number): Promise<void> {
  await tx.query(lockLanguageExclusively(langKey));
}

/**
 * Waits until every writer of the language that was in flight when this was
 * called has committed or aborted (the exclusive lock, taken and let go).
 *
 * One statement in a transaction of its own (a pool, never a transaction):
 * Postgres lets the lock go as soon as it is granted. Taken in BEGIN ... COMMIT,
 * it stayed held until the worker's COMMIT came back, and every writer of the
 * language queued behind it waited for that round trip through the worker too.
 */
export async function waitForLanguageWriters(db: DatabasePool, langKey: number): Promise<void> {
  await db.query(lockLanguageExclusively(langKey));
}

/** One applier per language at a time; held until the batch transaction ends. */
export async function tryLockApplier(tx: DatabaseTransactionConnection, langKey: number): Promise<boolean> {
  return tx.oneFirst(sql.type(z.object({ locked: z.boolean() }))`SELECT sync_try_lock_applier(${langKey}) AS locked`);
}

/** Waits for the language's applier lock, held until the transaction ends (operator actions that write audit entries). */
export async function lockApplier(tx: DatabaseTransactionConnection, langKey: number): Promise<void> {
  await tx.query(sql.unsafe`SELECT sync_lock_applier(${langKey})`);
}

/** The transactions holding an applier lock right now (virtual transaction ids). */
export async function applierLockHolders(db: CommonQueryMethods): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ vxid: z.string() }))`SELECT sync_applier_lock_holders() AS vxid`);
}
