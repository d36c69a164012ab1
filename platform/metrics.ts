import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Queue } from 'bullmq';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from './db.js';

/**
 * Prometheus metrics. Every API and worker instance gets a Registry of its own
 * rather than prom-client's global one: tests start several apps in one
 * process, and a metric name can be registered only once per registry.
 */
export function createMetricsRegistry(service: 'api' | 'worker'): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** The job states BullMQ reports; a fixed list so a state with no jobs shows 0 instead of vanishing. */
export const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed', 'paused'] as const;

/** Queue jobs by state, read from Redis at scrape time. */
export function registerQueueMetrics(registry: Registry, queues: Queue[], logger: Logger): void {
  new Gauge({
    name: 'sync_queue_jobs',
    help: 'Jobs in each BullMQ queue by state, read at scrape time',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      // A scrape must still answer while Redis is away: the queues' series go missing, which is the alert.
      this.reset();
      await Promise.all(
        queues.map(async (queue) => {
          try {
            const counts = await queue.getJobCounts(...JOB_STATES);
            for (const state of JOB_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
          } catch (error) {
            logger.debug({ err: (error as Error).message, queue: queue.name }, 'queue metrics unavailable');
          }
        }),
      );
    },
  });
}

export interface PoolUsage {
  /** Connections lent out. */
  active: number;
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
}

/** slonik 47 reports its pool through `state()`. */
export const slonikPoolUsage = (db: Database) => (): PoolUsage => {
  const state = db.state();
  return { active: state.acquiredConnections, idle: state.idleConnections, waiting: state.waitingClients };
};

/** A plain pg.Pool (the COPY pool of bulk uploads). */
export const pgPoolUsage = (pool: Pool) => (): PoolUsage => ({
  active: pool.totalCount - pool.idleCount,
  idle: pool.idleCount,
  waiting: pool.waitingCount,
});

/** Postgres pool usage, read at scrape time. */
export function registerPoolMetrics(registry: Registry, pools: Record<string, () => PoolUsage>): void {
  const waiting = new Gauge({
    name: 'sync_db_pool_waiting_clients',
    help: 'Callers waiting for a free Postgres connection',
    labelNames: ['pool'],
    registers: [registry],
  });
  new Gauge({
    name: 'sync_db_pool_connections',
    help: 'Postgres pool connections by state (active = lent out, idle)',
    labelNames: ['pool', 'state'],
    registers: [registry],
    collect() {
      for (const [pool, usage] of Object.entries(pools)) {
        const current = usage();
        this.set({ pool, state: 'active' }, current.active);
        this.set({ pool, state: 'idle' }, current.idle);
        waiting.set({ pool }, current.waiting);
      }
    },
  });
}

export function createHttpMetrics(registry: Registry) {
  return new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, matched route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
}

export type HttpMetrics = ReturnType<typeof createHttpMetrics>;

/** The limiters of the API: `account` (request limits), `oauth_token` and `admin` (failed sign-ins), `token_issue` (tokens per client). */
export type LimiterName = 'account' | 'oauth_token' | 'admin' | 'token_issue';

export function createLimitMetrics(registry: Registry) {
  return {
    refused: new Counter({
      name: 'sync_rate_limited_total',
      help: 'Requests refused with 429 by a limiter (account: request limits; oauth_token, admin: repeated failed sign-ins; token_issue: tokens per client)',
      labelNames: ['limiter'],
      registers: [registry],
    }),
    unavailable: new Counter({
      name: 'sync_rate_limit_unavailable_total',
      help: 'Requests let through unchecked because the limiter could not ask Redis (it is protection; Redis is a transport)',
      labelNames: ['limiter'],
      registers: [registry],
    }),
  };
}

export type LimitMetrics = ReturnType<typeof createLimitMetrics>;

export function createJobMetrics(registry: Registry) {
  return {
    duration: new Histogram({
      name: 'sync_job_duration_seconds',
      help: 'Time a worker spent on one attempt of a job, by queue, job name and outcome',
      labelNames: ['queue', 'name', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    attempts: new Histogram({
      name: 'sync_job_attempts',
      help: 'Which attempt of its job each run was (1 = first try), by queue, job name and outcome',
      labelNames: ['queue', 'name', 'outcome'],
      buckets: [1, 2, 3, 4, 5, 6, 7, 8],
      registers: [registry],
    }),
  };
}

export type JobMetrics = ReturnType<typeof createJobMetrics>;

/** Who applied a change's effects: the applier draining the outbox, or a bulk batch in turn (sync/in-turn.applier.ts). */
export type AppliedBy = 'applier' | 'bulk_in_turn';

export function createApplierMetrics(registry: Registry) {
  const changesApplied = new Counter({
    name: 'sync_changes_applied_total',
    help: 'Changes whose effects were applied and committed, by who applied them (applier: from the outbox; bulk_in_turn: by the bulk batch that stored them)',
    labelNames: ['by'],
    registers: [registry],
  });
  // Both series from the start: a worker that has applied nothing yet shows 0, not a missing series.
  for (const by of ['applier', 'bulk_in_turn'] satisfies AppliedBy[]) changesApplied.inc({ by }, 0);
  const bulkBatchesLineByLine = new Counter({
    name: 'sync_bulk_batches_line_by_line_total',
    help: 'Bulk batches that failed as a whole for no line of their own and were taken again line by line, each line in a savepoint of its own (correct, but many times slower)',
    registers: [registry],
  });
  return { changesApplied, bulkBatchesLineByLine };
}

export type ApplierMetrics = ReturnType<typeof createApplierMetrics>;

/** What retention removes (worker/processors/apply-retention.processor.ts): rows of bulk lines, line errors and deliveries, and whole audit blocks. */
export const RETENTION_KINDS = ['audit_blocks', 'bulk_lines', 'bulk_errors', 'webhook_deliveries'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/**
 * Retention's removals, counted by the worker that made them, and the audit
 * log's retained history as Postgres has it at scrape time (`read`).
 */
export function createRetentionMetrics(
  registry: Registry,
  read: () => Promise<{ blocks: number; removedThrough: number }>,
  onUnavailable: (error: Error) => void,
) {
  const removed = new Counter({
    name: 'sync_retention_removed_total',
    help: 'What retention removed: audit_blocks (whole partitions of the audit log), or rows of bulk_lines, bulk_errors and webhook_deliveries',
    labelNames: ['kind'],
    registers: [registry],
  });
  for (const kind of RETENTION_KINDS) removed.inc({ kind }, 0);
  const removedThrough = new Gauge({
    name: 'sync_audit_removed_through_seq',
    help: 'The audit seq at and below which entries were removed by retention (the change feed starts after it)',
    registers: [registry],
  });
  new Gauge({
    name: 'sync_audit_blocks',
    help: 'Blocks (partitions) of the audit log retained',
    registers: [registry],
    async collect() {
      try {
        const stats = await read();
        this.set(stats.blocks);
        removedThrough.set(stats.removedThrough);
      } catch (error) {
        this.reset();
        removedThrough.reset();
        onUnavailable(error as Error);
      }
    },
  });
  return { removed };
}

export type RetentionMetrics = ReturnType<typeof createRetentionMetrics>;

/**
 * A counter showing counts kept elsewhere (which only grow), read at scrape
 * time: one series per key `read` answers, named by `label`; or, with no
 * label, the one count.
 */
export function registerScrapedCounter(
  registry: Registry,
  meta: { name: string; help: string },
  read: () => number | Record<string, number>,
  label?: string,
): void {
  new Counter({
    ...meta,
    ...(label === undefined ? {} : { labelNames: [label] }),
    registers: [registry],
    collect() {
      const counts = read();
      this.reset();
      if (typeof counts === 'number') this.inc(counts);
      else for (const [value, count] of Object.entries(counts)) this.inc({ [label!]: value }, count);
    },
  });
}

/** A gauge showing a value kept elsewhere, read at scrape time. */
export function registerScrapedGauge(registry: Registry, meta: { name: string; help: string }, read: () => number): void {
  new Gauge({
    ...meta,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

export async function renderMetrics(registry: Registry): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * A small HTTP server for processes without an API (workers): GET /metrics.
 * When the port is taken (several workers on one host with the default port),
 * it warns and listens on a free port instead of refusing to start the worker:
 * processing jobs matters more than being scraped.
 */
export async function serveMetrics(registry: Registry, port: number, host: string, logger: Logger): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'application/json' }).end('{"error":{"message":"Method not allowed"}}');
      return;
    }
    if (path !== '/metrics') {
      response.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"Not found"}');
      return;
    }
    renderMetrics(registry).then(
      ({ contentType, body }) => response.writeHead(200, { 'Content-Type': contentType }).end(request.method === 'HEAD' ? undefined : body),
      (error: Error) => {
        logger.warn({ err: error.message }, 'metrics scrape failed');
        response.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":"The request cannot be processed at this moment"}');
      },
    );
  });
  const listen = (candidate: number) =>
    new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      server.once('error', onError);
      server.listen(candidate, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
  try {
    await listen(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw error;
    await listen(0);
    logger.warn({ wanted: port, port: (server.address() as AddressInfo).port }, 'metrics port in use; listening on a free port instead');
  }
  const actual = (server.address() as AddressInfo).port;
  return {
    port: actual,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
