import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.js';

const run = promisify(execFile);

/**
 * A Postgres cluster of its own (initdb + pg_ctl on a free port): for tests
 * that stop and start Postgres (the shared cluster on 5432 serves every other
 * test and must never be stopped), and for the bench, which runs on the
 * settings docker-compose.yml ships. As root, the server runs as the
 * `postgres` user (Postgres refuses to run as root).
 */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:PORT` (trust authentication), without a database. */
  url: string;
  /** Its data directory (for pg_ctl). */
  dataDirectory: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}

export interface PrivatePostgresOptions {
  /**
   * Crash-safe as a deployment (the bench). Tests leave it out: they never
   * outlive a crash of their server, and fsync would only slow them down.
   */
  durable?: boolean;
  /** Server settings (`name=value`), as `postgres -c` takes them. */
  settings?: readonly string[];
}

/** A directory and a free port for a server of the test's own, and how to run its tools as the directory's owner. */
export async function serverPlace(prefix: string) {
  const directory = await mkdtemp(path.join(os.tmpdir(), prefix));
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  const asOwner = (command: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', command, ...args]) : run(command, args);
  if (asRoot) await run('chown', ['postgres:postgres', directory]);
  return { directory, port, asOwner, data: path.join(directory, 'data') };
}

export async function startPrivatePostgres(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const { directory, port, asOwner, data } = await serverPlace('cs-pg-');
  const settings = [
    'listen_addresses=127.0.0.1',
    ...(options.durable ? [] : ['fsync=off', 'synchronous_commit=off']),
    ...(options.settings ?? []),
  ];
  const serverOptions = [`-p ${port}`, `-k ${directory}`, ...settings.map((setting) => `-c ${setting}`)].join(' ');
  const start = async () => {
    await asOwner('pg_ctl', ['-D', data, '-o', serverOptions, '-l', path.join(directory, 'log'), '-w', '-t', '60', 'start']);
  };
  const stop = async () => {
    await asOwner('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  };
  try {
    await asOwner('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      ...(options.durable ? [] : ['--no-sync']),
    ]);
    await start();
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}`,
    dataDirectory: data,
    start,
    stop,
    async destroy() {
      await asOwner('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      await rm(directory, { recursive: true, force: true });
    },
  };
}
