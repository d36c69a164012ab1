import { sql } from 'slonik';
import type { Database } from '../../platform/db.js';
import { holdLanguageForWrite } from '../../sync/locks.js';

export interface HeldWriter {
  /** Lets the write commit and resolves once it has. */
  release(): Promise<void>;
}

/**
 * Opens a single write of the language that has taken its number and not
 * committed yet, and resolves once it holds: while it is in flight, other
 * writes of the language cannot be its next to apply, so they are queued.
 */
export async function holdWriter(db: Database, langKey: number): Promise<HeldWriter> {
  let release!: () => void;
  let holding!: () => void;
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const writer = db.transaction(async (tx) => {
    await holdLanguageForWrite(tx, langKey);
    await tx.query(sql.unsafe`SELECT nextval('write_seq')`);
    holding();
    await new Promise<void>((resolve) => {
      release = resolve;
    });
  });
  await held;
  return {
    async release() {
      release();
      await writer;
    },
  };
}
