/*
 * Postgres WAL positions (LSNs), as `pg_current_wal_insert_lsn()` and
 * `pg_last_wal_replay_lsn()` print them: two hexadecimal halves, 'X/Y'.
 * Compared as numbers: as text, '0/A0' sorts before '0/B' although it is later.
 */

/** The position 'X/Y' as the number of WAL bytes it is from the start. */
export function parseWalPosition(text: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!match) throw new Error(`not a WAL position: ${text}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** The position as fixed-width hexadecimal, whose text order is its numeric order (for a comparison in Redis' Lua). */
export const sortableWalPosition = (position: bigint): string => position.toString(16).padStart(16, '0');

/** The position back from its sortable text. */
export const fromSortableWalPosition = (text: string): bigint => BigInt(`0x${text}`);
