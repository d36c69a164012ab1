import { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { migrateCommand } from './commands.js';
import { redisTargetOf } from './config.js';
import { pendingMigrations } from './migrator.js';

/*
 * Start-up checks: before a process starts work it makes sure Postgres and
 * Redis answer, so a missing dependency is one readable line naming the host
 * and the variable to fix, instead of a stack trace (or a process that starts
 * and fails every request).
 */

/** A dependency the process cannot start without; its message is the one line to print. */
export class StartupError extends Error {}

const TIMEOUT_MS = 5_000;

/** host:port of a connection URL, with the protocol's default port. */
export function hostOf(url: string, defaultPort: number): string {
  const parsed = new URL(url);
  return `${parsed.hostname || 'localhost'}:${parsed.port || defaultPort}`;
}

function reason(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  if (code && message && !message.includes(code)) return `${code} ${message}`;
  return message || code || String(error);
}

/**
 * Connects to Postgres. `database: 'server'` only needs the server (the
 * migrator creates a missing database); 'existing' needs the database of the
 * URL; 'migrated' also needs every migration applied.
 * @throws {StartupError}
 */
export async function checkPostgres(
  databaseUrl: string,
  need: 'server' | 'existing' | 'migrated',
  variable = 'DATABASE_URL',
): Promise<void> {
  const host = hostOf(databaseUrl, 5432);
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  const target = new URL(databaseUrl);
  if (need === 'server') target.pathname = '/postgres';
  const client = new pg.Client({ connectionString: target.toString(), connectionTimeoutMillis: TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === '3D000')
      throw new StartupError(
        `Database "${name}" does not exist on Postgres at ${host} (${variable}): create it with \`${migrateCommand()}\`, or fix ${variable}`,
      );
    if (code === '28P01' || code === '28000')
      throw new StartupError(`Postgres at ${host} refused the credentials in ${variable}: ${reason(error)}`);
    throw new StartupError(`Cannot reach Postgres at ${host} (${variable}): ${reason(error)}`);
  } finally {
    await client.end().catch(() => undefined);
  }
  if (need !== 'migrated') return;
  const pending = await pendingMigrations(databaseUrl);
  if (pending.length > 0) {
    const shown = pending.slice(0, 3).join(', ') + (pending.length > 3 ? `, ... (${pending.length} in all)` : '');
    throw new StartupError(`Database "${name}" at ${host} (${variable}) is not migrated: ${shown} pending; run \`${migrateCommand()}\``);
  }
}

/**
 * Connects to Redis and pings it once; a cluster must also say its slots are
 * all served (`cluster_state:ok`).
 * @throws {StartupError}
 */
export async function checkRedis(redisUrl: string, variable = 'REDIS_URL'): Promise<void> {
  const target = redisTargetOf(redisUrl);
  const host =
    target.kind === 'single'
      ? hostOf(redisUrl, 6379)
      : `cluster nodes ${target.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`;
  const options = { lazyConnect: true, connectTimeout: TIMEOUT_MS, maxRetriesPerRequest: 0 };
  const redis =
    target.kind === 'single'
      ? new Redis(target.url, { ...options, enableOfflineQueue: false, retryStrategy: () => null })
      : new Cluster(target.nodes, {
          lazyConnect: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: () => null,
          slotsRefreshTimeout: TIMEOUT_MS,
          redisOptions: {
            ...options,
            ...(target.username === undefined ? {} : { username: target.username }),
            ...(target.password === undefined ? {} : { password: target.password }),
          },
        });
  // The socket's own error (ECONNREFUSED, ENOTFOUND) says more than the rejection ("Connection is closed").
  let socketError: unknown;
  redis.on('error', (error) => {
    socketError ??= error;
  });
  // A cluster whose ready check fails (cluster_state:fail) ends without settling connect().
  const ended = new Promise<never>((_, reject) =>
    redis.once('end', () => reject(new Error('the cluster does not serve every slot (cluster_state is not ok)'))),
  );
  ended.catch(() => undefined);
  try {
    await (redis instanceof Cluster ? Promise.race([redis.connect(), ended]) : redis.connect());
    await redis.ping();
  } catch (error) {
    // A cluster's "Failed to refresh slots cache" carries what its last node answered (its socket errors are not told).
    const failure = (socketError ?? error) as { lastNodeError?: Error };
    const cause =
      failure.lastNodeError?.message === 'Connection is closed.'
        ? 'no node could be connected to'
        : reason(failure.lastNodeError ?? failure);
    throw new StartupError(`Cannot reach Redis at ${host} (${variable}): ${cause}`);
  } finally {
    redis.disconnect();
  }
}
