import type { Queue } from 'bullmq';
import type { Pool } from 'pg';
import { Gauge, type Registry } from 'prom-client';
import type { FeedWaiter } from '../feed/feed.waiter.js';
import type { Database } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import {
  createHttpMetrics,
  createLimitMetrics,
  createMetricsRegistry,
  pgPoolUsage,
  registerPoolMetrics,
  registerQueueMetrics,
  registerScrapedCounter,
  registerScrapedGauge,
  slonikPoolUsage,
} from '../platform/metrics.js';
import type { AnchorStats } from '../reads/list-anchors.js';
import type { ListPageCache } from '../reads/list-page-cache.js';
import type { ReadRouter } from '../reads/read-router.js';
import type { WriterStats } from '../sync/prepared-write.js';
import { outboxCounts } from '../sync/status.repository.js';
import type { WritePositions } from '../sync/write-positions.js';

/** The outbox backlog: accepted changes whose effects are not applied yet, and changes set aside as failed. */
export function registerOutboxMetrics(registry: Registry, db: Database, logger: Logger): void {
  const failed = new Gauge({ name: 'sync_outbox_failed', help: 'Outbox entries set aside as failed', registers: [registry] });
  new Gauge({
    name: 'sync_outbox_pending',
    help: 'Accepted changes whose queued effects are not applied yet (0 means drained)',
    registers: [registry],
    async collect() {
      try {
        const counts = await outboxCounts(db);
        this.set(counts.pending);
        failed.set(counts.failed);
      } catch (error) {
        this.reset();
        failed.reset();
        logger.debug({ err: (error as Error).message }, 'outbox metrics unavailable');
      }
    },
  });
}

export interface ApiMetricsSources {
  db: Database;
  copyPool: Pool;
  writePool: Pool;
  writerStats: WriterStats;
  readPool: Pool;
  /** The list page caches: the primary's, and each read replica's. */
  pages: () => readonly ListPageCache[];
  /** The deep pages' anchor reads (reads/list-anchors.ts), on the primary and on each read replica. */
  anchors: () => readonly AnchorStats[];
  queues: Queue[];
  logger: Logger;
  waiter: FeedWaiter;
  /** Where reads ran (reads/read-router.ts). */
  reads: ReadRouter;
  /** With read replicas: accounts' write positions kept (sync/write-positions.ts). */
  positions: WritePositions | undefined;
}

/** Reads by where they ran and, with read replicas, each replica's lag and health and the write positions kept. */
export function registerReadMetrics(registry: Registry, reads: ReadRouter, positions: WritePositions | undefined): void {
  registerScrapedCounter(
    registry,
    {
      name: 'sync_reads_total',
      help: 'Routed reads (v2 GETs of records and languages, the v1 profile lookup) this API process answered, by the server that answered',
    },
    () => ({ primary: reads.stats.primary, replica: reads.stats.replica }),
    'target',
  );
  const replicas = reads.replicaSet;
  if (!replicas || !positions) return;
  registerScrapedCounter(
    registry,
    { name: 'sync_replica_fallbacks_total', help: 'Reads begun on each read replica that failed there and were answered by the primary' },
    () => Object.fromEntries(replicas.replicas.map((replica) => [replica.name, replica.failures])),
    'replica',
  );
  new Gauge({
    name: 'sync_replica_lag_bytes',
    help: 'WAL bytes each read replica had still to replay when last asked (every REPLICA_POLL_MS)',
    labelNames: ['replica'],
    registers: [registry],
    collect() {
      this.reset();
      for (const replica of replicas.replicas) {
        const lag = replicas.lagBytes(replica);
        if (lag !== undefined) this.set({ replica: replica.name }, lag);
      }
    },
  });
  new Gauge({
    name: 'sync_replica_up',
    help: '1 while a read replica is used; 0 while it is left out after a failure',
    labelNames: ['replica'],
    registers: [registry],
    collect() {
      for (const replica of replicas.replicas) this.set({ replica: replica.name }, replicas.healthy(replica) ? 1 : 0);
    },
  });
  registerScrapedCounter(
    registry,
    {
      name: 'sync_write_positions_total',
      help: "Accounts' write positions this API process kept for read-your-writes (recorded), or could not keep (failed)",
    },
    () => ({ recorded: positions.stats.recorded, failed: positions.stats.failed }),
    'outcome',
  );
}

/** Deep pages of the v2 lists (reads/list-anchors.ts): whether they start from an anchor, and how often anchors are read. */
export function registerAnchorMetrics(registry: Registry, stats: () => readonly AnchorStats[]): void {
  const sum = (key: keyof AnchorStats) => stats().reduce((total, each) => total + each[key], 0);
  // Counted where they happen (list-anchors.ts); these counters show those counts at scrape time.
  registerScrapedCounter(
    registry,
    {
      name: 'sync_list_anchor_reads_total',
      help: 'Deep-page anchor reads of v2 lists this API process started (outcome read), and those that failed',
    },
    () => ({ read: sum('read'), failed: sum('failed') }),
    'outcome',
  );
  registerScrapedCounter(
    registry,
    {
      name: 'sync_list_deep_pages_total',
      help: 'v2 list pages starting 1,000 or more items in, by how they started: from an anchor, or walked from the nearer end',
    },
    () => ({ anchor: sum('fromAnchor'), walked: sum('walked') }),
    'start',
  );
}

/** Single writes, and the statements that carried them (sync/prepared-write.ts): more writes than statements is writes sent together. */
export function registerWriterMetrics(registry: Registry, stats: WriterStats): void {
  registerScrapedCounter(
    registry,
    { name: 'sync_single_writes_total', help: 'Single writes of records this API process sent to Postgres' },
    () => stats.writes,
  );
  registerScrapedCounter(
    registry,
    {
      name: 'sync_single_write_statements_total',
      help: 'Statements that carried the single writes: one per write sent alone, one per writes sent together',
    },
    () => stats.statements,
  );
}

/** v2 list pages: read, read again because their language changed, or answered as kept (reads/list-page-cache.ts). */
export function registerPageCacheMetrics(registry: Registry, pages: () => readonly ListPageCache[]): void {
  const sum = (count: (cache: ListPageCache) => number) => pages().reduce((total, cache) => total + count(cache), 0);
  registerScrapedCounter(
    registry,
    {
      name: 'sync_list_pages_total',
      help: 'v2 list pages this API process answered, by source: read (none kept), stale (kept, but its language was written since), reused (kept and unchanged)',
    },
    () => ({
      read: sum((cache) => cache.stats.read),
      stale: sum((cache) => cache.stats.stale),
      reused: sum((cache) => cache.stats.reused),
    }),
    'source',
  );
  registerScrapedGauge(
    registry,
    {
      name: 'sync_list_page_cache_bytes',
      help: 'Bytes of v2 list pages kept by this API process to answer again (LIST_PAGE_CACHE_MB bounds it)',
    },
    () => sum((cache) => cache.keptBytes),
  );
}

/** The change feed's held reads (feed/feed.waiter.ts): how many wait, and whether their listener is connected. */
export function registerFeedMetrics(registry: Registry, waiter: FeedWaiter): void {
  registerScrapedGauge(
    registry,
    { name: 'sync_feed_waiting_readers', help: 'Change feed requests of this API process held with `wait` until an entry arrives' },
    () => waiter.readers,
  );
  registerScrapedGauge(
    registry,
    {
      name: 'sync_feed_listening',
      help: '1 while the change feed listener is connected; 0 while held reads look again every second instead',
    },
    () => (waiter.listening ? 1 : 0),
  );
}

/** A replica's pools before it first answered. */
const UNOPENED = { active: 0, idle: 0, waiting: 0 };

/** Everything the API's /metrics shows, in a registry of this app's own. */
export function createApiMetrics({
  db,
  copyPool,
  writePool,
  writerStats,
  readPool,
  pages,
  anchors,
  queues,
  logger,
  waiter,
  reads,
  positions,
}: ApiMetricsSources) {
  const registry = createMetricsRegistry('api');
  registerWriterMetrics(registry, writerStats);
  registerPageCacheMetrics(registry, pages);
  registerFeedMetrics(registry, waiter);
  registerQueueMetrics(registry, queues, logger);
  registerOutboxMetrics(registry, db, logger);
  registerAnchorMetrics(registry, anchors);
  registerReadMetrics(registry, reads, positions);
  registerPoolMetrics(registry, {
    api: slonikPoolUsage(db),
    write: pgPoolUsage(writePool),
    read: pgPoolUsage(readPool),
    copy: pgPoolUsage(copyPool),
    ...Object.fromEntries(
      (reads.replicaSet?.replicas ?? []).flatMap((replica) => [
        [`replica_api:${replica.name}`, () => (replica.target ? slonikPoolUsage(replica.target.db)() : UNOPENED)],
        [`replica_read:${replica.name}`, () => (replica.target ? pgPoolUsage(replica.target.reader.pool)() : UNOPENED)],
      ]),
    ),
  });
  return { registry, http: createHttpMetrics(registry), limits: createLimitMetrics(registry) };
}
