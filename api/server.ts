import { createServer, type Server } from 'node:http';
import type Koa from 'koa';
import pg from 'pg';
import { TokenVerifier } from '../auth/token-verifier.js';
import { FeedWaiter } from '../feed/feed.waiter.js';
import type { Config } from '../platform/config.js';
import { createDatabase, type Database } from '../platform/db.js';
import { createLogger, type Logger } from '../platform/logger.js';
import { createQueues, jobOptionsOf, settleConnections } from '../platform/queue.js';
import { createRedis } from '../platform/redis.js';
import { PreparedReader } from '../reads/prepared-read.js';
import { ReadCaches } from '../reads/read-caches.js';
import type { ReadTarget } from '../reads/read-context.js';
import { ReadReplicas, type Replica } from '../reads/read-replicas.js';
import { ReadRouter } from '../reads/read-router.js';
import { LiveLanguages } from '../records/live-languages.js';
import { OutboxNotifier } from '../sync/outbox.notifier.js';
import { PreparedWriter } from '../sync/prepared-write.js';
import { WritePositions } from '../sync/write-positions.js';
import { createApp } from './app.js';
import { ConnectionGuard } from './connection-guard.js';
import type { AppState } from './context.js';

export interface RunningApi {
  server: Server;
  /** The Koa app, for tests that inspect its routers. */
  app: Koa<AppState>;
  port: number;
  close(): Promise<void>;
}

/**
 * The read replicas of DATABASE_REPLICA_URLS, each with pools and caches of
 * its own (reads/read-router.ts says what reads go there); undefined when
 * there are none, and then nothing about reads or writes changes. A replica
 * down at start-up is left out until it answers.
 */
async function startReplicas(config: Config, primary: Database, primaryReader: PreparedReader, logger: Logger) {
  if (config.DATABASE_REPLICA_URLS.length === 0) return undefined;
  const timeoutMs = config.REPLICA_STATEMENT_TIMEOUT_MS;
  const replicas: Replica[] = [];
  for (const url of config.DATABASE_REPLICA_URLS) {
    const name = new URL(url).host;
    // Opened by the first poll it answers: slonik's pool connects as it is created.
    const open = async (): Promise<ReadTarget> => {
      const db = await createDatabase(url, { maximumPoolSize: 10, statementTimeoutMs: timeoutMs, connectionTimeoutMs: timeoutMs });
      const reader = new PreparedReader({
        connectionString: url,
        max: 10,
        statementTimeoutMs: timeoutMs,
        connectionTimeoutMs: timeoutMs,
        pageCacheBytes: config.LIST_PAGE_CACHE_MB * 1024 * 1024,
      });
      reader.pool.on('error', (error) => logger.debug({ err: error.message, replica: name }, 'replica read pool error'));
      return { db, reader, caches: new ReadCaches(db, primary), replica: true };
    };
    replicas.push({ name, open, unhealthyUntil: 0, failures: 0, polling: false, down: false });
  }
  const set = new ReadReplicas(primaryReader.pool, replicas, { pollMs: config.REPLICA_POLL_MS, logger });
  set.start();
  return set;
}

/** How long close() lets in-flight requests run before cutting their connections (below bin/run.ts's grace). */
const DRAIN_TIMEOUT_MS = 15_000;

/** Starts the HTTP API; `close()` stops accepting connections, lets in-flight requests finish and closes the pools. */
export async function startApi(config: Config, logger: Logger = createLogger(config.LOG_LEVEL, 'api')): Promise<RunningApi> {
  const db = await createDatabase(config.DATABASE_URL, { maximumPoolSize: 10 });
  // Single writes have a pool of their own: one prepared statement per write, or per writes that meet (sync/prepared-write.ts).
  const writer = new PreparedWriter({ connectionString: config.DATABASE_URL, max: 10, statementTimeoutMs: 30_000 });
  writer.pool.on('error', (error) => logger.warn({ err: error.message }, 'write pool error'));
  // v2 list pages too: their statement prepared once per connection, with a generic plan (reads/prepared-read.ts).
  const reader = new PreparedReader({
    connectionString: config.DATABASE_URL,
    max: 10,
    statementTimeoutMs: 30_000,
    pageCacheBytes: config.LIST_PAGE_CACHE_MB * 1024 * 1024,
  });
  reader.pool.on('error', (error) => logger.warn({ err: error.message }, 'read pool error'));
  // What the v2 reads keep between requests: built statements, deep-page anchors, counters being folded.
  const caches = new ReadCaches(db);
  // The live languages a write or a list page starts from; their own statements check again.
  const languages = new LiveLanguages(db);
  const redis = createRedis(config.REDIS_URL, 'producer');
  redis.on('error', (error) => logger.warn({ err: error.message }, 'redis connection error'));
  // Every request's limit is counted in Redis, the requests of one tick in one script call, one per account on a cluster (auth/request-limiter.ts).
  const limitsRedis = createRedis(config.REDIS_URL, 'producer');
  limitsRedis.on('error', (error) => logger.warn({ err: error.message }, 'redis connection error'));
  const replicas = await startReplicas(config, db, reader, logger);
  const positions =
    replicas &&
    new WritePositions(db, redis, {
      prefix: config.QUEUE_PREFIX,
      ttlS: config.READ_POSITION_TTL_S,
      onFailure: (error) => logger.warn({ err: error.message }, 'write position not kept: its account reads from the primary here'),
    });
  const reads = new ReadRouter({ db, reader, caches, replica: false }, replicas && positions && { set: replicas, positions });
  const verifier = new TokenVerifier(db, config.DATABASE_URL, logger);
  await verifier.start();
  // One LISTEN connection for every change feed request waiting in this process.
  const waiter = new FeedWaiter(config.DATABASE_URL, logger);
  await waiter.start();
  const queues = createQueues(
    redis,
    config.QUEUE_PREFIX,
    (error) => logger.debug({ err: error.message }, 'queue error'),
    jobOptionsOf(config),
  );
  const notifier = new OutboxNotifier(queues.effects, logger, queues.bulk);
  // Bulk uploads stream into Postgres with COPY, which needs plain pg connections.
  const copyPool = new pg.Pool({ connectionString: config.DATABASE_URL, max: 4 });
  copyPool.on('error', (error) => logger.warn({ err: error.message }, 'copy pool error'));
  const app = createApp({
    config,
    db,
    copyPool,
    writer,
    reads,
    positions,
    languages,
    redis,
    limitsRedis,
    logger,
    verifier,
    notifier,
    waiter,
    queues: Object.values(queues),
  });
  // Node's request timeout (300 s by default) is off: it would cut bulk uploads still sending; the guard bounds slow clients.
  const guard = new ConnectionGuard({
    bodyTimeoutMs: config.BODY_TIMEOUT_MS,
    headersTimeoutMs: config.HEADERS_TIMEOUT_MS,
    unauthenticatedPerAddress: config.TRUST_PROXY_HOPS > 0 ? null : config.UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS,
  });
  const server = createServer(
    {
      requestTimeout: 0,
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      // How often Node looks for connections past headersTimeout (30 s by default, which would make the timeout that much later).
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(config.HEADERS_TIMEOUT_MS / 4)),
    },
    guard.handler(app.callback()),
  );
  guard.attach(server);
  server.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  logger.info({ port, host: config.HOST }, 'api listening');
  // Said once here rather than on every /admin request: the operator sees it where the service starts.
  if (!config.ADMIN_PASSWORD) logger.warn('admin disabled: ADMIN_PASSWORD is unset, so /admin answers 503; set it to enable /admin');

  let closing: Promise<void> | undefined;
  // While closing, answers tell keep-alive clients not to reuse the connection; a busy
  // client would otherwise keep its connection active and hold the close open.
  server.on('request', (_request, response) => {
    if (closing && !response.headersSent) response.setHeader('Connection', 'close');
  });
  return {
    server,
    app,
    port,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          // No new connections; in-flight requests finish. A keep-alive connection becomes idle
          // once its response is sent, so idle ones are closed again until none is left.
          server.close(() => resolve());
          // Held change feed reads answer now with what they have, rather than holding the close.
          void waiter.close();
          server.closeIdleConnections();
          const sweep = setInterval(() => server.closeIdleConnections(), 50);
          const cut = setTimeout(() => server.closeAllConnections(), DRAIN_TIMEOUT_MS);
          server.once('close', () => {
            clearInterval(sweep);
            clearTimeout(cut);
          });
        });
        await verifier.close();
        await settleConnections(Object.values(queues));
        await Promise.all(Object.values(queues).map((queue) => queue.close()));
        await db.end();
        await writer.end();
        await reader.end();
        replicas?.stop();
        for (const replica of replicas?.replicas ?? []) {
          await replica.target?.db.end();
          await replica.target?.reader.end();
        }
        await copyPool.end();
        redis.disconnect();
        limitsRedis.disconnect();
      })();
      return closing;
    },
  };
}
