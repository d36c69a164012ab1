import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { type PrivatePostgres, serverPlace } from './postgres.js';

const _run = promisify(execFile);

/** A streaming replica of a private Postgres (pg_basebackup -R, then pg_ctl start as a hot standby). */
export interface StreamingReplica {
  /** `postgres://postgres@127.0.0.1:PORT`, without a database. */
  url: string;
  /** Holds WAL replay back (the replica keeps answering, with what it had). */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Waits until it has replayed everything the primary had written when asked. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** `pg_ctl stop -m immediate`: a crash, as far as its clients can tell. */
  crash(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

async function queryOnce<T>(url: string, text: string): Promise<T | undefined> {
  const client = new pg.Client({ connectionString: `${url}/postgres` });
  await client.connect();
  try {
    return (await client.query(text)).rows[0]?.value as T | undefined;
  } finally {
    await client.end();
  }
}

export async function startStreamingReplica(primary: PrivatePostgres): Promise<StreamingReplica> {
  const { directory, port, asOwner, data } = await serverPlace('cs-replica-');
  const serverOptions = [`-p ${port}`, `-k ${directory}`, '-c listen_addresses=127.0.0.1', '-c fsync=off', '-c hot_standby=on'].join(' ');
  const start = async () => {
    await asOwner('pg_ctl', ['-D', data, '-o', serverOptions, '-l', path.join(directory, 'log'), '-w', '-t', '60', 'start']);
  };
  try {
    await asOwner('pg_basebackup', ['-R', '-X', 'stream', '-D', data, '-d', `${primary.url}/postgres`]);
    await start();
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  const url = `postgres://postgres@127.0.0.1:${port}`;
  return {
    url,
    async pauseReplay() {
      await queryOnce(url, 'SELECT pg_wal_replay_pause()');
      for (;;) {
        if ((await queryOnce<string>(url, 'SELECT pg_get_wal_replay_pause_state() AS value')) === 'paused') return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async resumeReplay() {
      await queryOnce(url, 'SELECT pg_wal_replay_resume()');
    },
    async caughtUp(timeoutMs = 30_000) {
      const target = await queryOnce<string>(primary.url, 'SELECT pg_current_wal_insert_lsn()::text AS value');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const behind = await queryOnce<boolean>(url, `SELECT pg_last_wal_replay_lsn() < '${target}'::pg_lsn AS value`);
        if (behind === false) return;
        if (Date.now() > deadline) throw new Error(`the replica did not replay up to ${target}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async crash() {
      await asOwner('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    start,
    async destroy() {
      await asOwner('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      await rm(directory, { recursive: true, force: true });
    },
  };
}
