import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '../platform/db.js';
import { migrate } from '../platform/migrator.js';
import { dropDatabase, POSTGRES_URL, uniqueName } from '../test/support/harness.js';
import { applierLockHolders, holdLanguageExclusively, holdLanguageForWrite, tryLockApplier, waitForLanguageWriters } from './locks.js';

const databaseName = uniqueName('cs_locks');
let db: Database;

beforeAll(async () => {
  await migrate(`${POSTGRES_URL}/${databaseName}`);
  db = await createDatabase(`${POSTGRES_URL}/${databaseName}`, { maximumPoolSize: 6 });
});
afterAll(async () => {
  await db.end();
  await dropDatabase(databaseName);
});

/** Starts `work` inside a transaction that stays open until the returned release() is called. */
function holdOpen(work: Parameters<Database['transaction']>[0]) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const done = db.transaction(async (tx) => {
    const result = await work(tx);
    entered();
    await released;
    return result;
  });
  return { inside, release, done };
}

/** Whether `promise` settles within `ms`. */
const settlesWithin = (promise: Promise<unknown>, ms: number) => Promise.race([promise.then(() => true), sleep(ms).then(() => false)]);

describe('when a writer holds its language', () => {
  it('should make the applier horizon wait until the writer commits, and only for that language', async () => {
    const writer = holdOpen((tx) => holdLanguageForWrite(tx, 1));
    await writer.inside;
    const waiting = waitForLanguageWriters(db, 1);
    expect(await settlesWithin(waiting, 200)).toBe(false);
    expect(await settlesWithin(waitForLanguageWriters(db, 2), 2_000)).toBe(true);
    writer.release();
    await writer.done;
    expect(await settlesWithin(waiting, 2_000)).toBe(true);
  });

  it('should let writers of one language run side by side, and make them wait for a language delete', async () => {
    const first = holdOpen((tx) => holdLanguageForWrite(tx, 3));
    const second = holdOpen((tx) => holdLanguageForWrite(tx, 3));
    await Promise.all([first.inside, second.inside]);
    first.release();
    second.release();
    await Promise.all([first.done, second.done]);

    const deletion = holdOpen((tx) => holdLanguageExclusively(tx, 3));
    await deletion.inside;
    const writer = holdOpen((tx) => holdLanguageForWrite(tx, 3));
    expect(await settlesWithin(writer.inside, 200)).toBe(false);
    deletion.release();
    await deletion.done;
    await writer.inside;
    writer.release();
    await writer.done;
  });
});

describe('when two appliers try the same language', () => {
  it('should let exactly one in and show it among the applier lock holders until it commits', async () => {
    expect(await applierLockHolders(db)).toEqual([]);
    const first = holdOpen((tx) => tryLockApplier(tx, 5));
    await first.inside;
    expect(await db.transaction((tx) => tryLockApplier(tx, 5))).toBe(false);
    expect(await db.transaction((tx) => tryLockApplier(tx, 6))).toBe(true);
    expect(await applierLockHolders(db)).toHaveLength(1);
    first.release();
    expect(await first.done).toBe(true);
    expect(await applierLockHolders(db)).toEqual([]);
    expect(await db.transaction((tx) => tryLockApplier(tx, 5))).toBe(true);
  });
});
