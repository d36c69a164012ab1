/** What `npm run bench` reads from its environment (README, Benchmark). */
const number = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

export const benchConfig = {
  /** A Postgres server to run against instead of one of the bench's own (started on docker-compose.yml's settings). */
  givenPostgres: process.env['BENCH_POSTGRES_URL'],
  redisUrl: process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379',
  durationS: number('BENCH_DURATION_S', 20),
  readDurationS: number('BENCH_READ_DURATION_S', 15),
  /**
   * Load each measured run is given first, not counted: a process just started runs its code unoptimised for its
   * first seconds (V8 tiers a function up only after many calls), which would put most of a short run's slowest
   * responses in its first second. The floor warms too; both are measured warm, as a deployment runs.
   */
  warmupS: number('BENCH_WARMUP_S', 3),
  bulkLines: number('BENCH_BULK_LINES', 1_000_000),
  /** Lines of the customer file (the profiles phase): new profiles, each matched by the profile rule (interface §4.5) before it is written. */
  profileLines: number('BENCH_PROFILE_LINES', 200_000),
  bulkTimeoutS: number('BENCH_BULK_TIMEOUT_S', 300),
  walkTimeoutS: number('BENCH_WALK_TIMEOUT_S', 60),
  categories: 1_000,
  /** Comma-separated subset of the phases (all by default): for profiling one phase. */
  phases: new Set((process.env['BENCH_PHASES'] ?? 'writes,uploads,bulk,profiles,reads,mixed,feed,webhooks,retention').split(',')),
  /** How long the feed and webhook phases read or deliver the bulk catalogue's history before they stop counting. */
  feedTimeoutS: number('BENCH_FEED_TIMEOUT_S', 60),
  /** Single writes a second while the webhook lag is measured. */
  webhookLagRate: number('BENCH_WEBHOOK_LAG_RATE', 500),
  /** Single products a second written to the read language while the mixed phase reads its pages. */
  mixedWriteRate: number('BENCH_MIXED_WRITE_RATE', 200),
  /** Reads timed while bodies of newlines are uploaded (the uploads phase). */
  uploadReads: 1_000,
  /** When set, the API and worker write V8 CPU profiles (--cpu-prof) into this directory. */
  profileDir: process.env['BENCH_PROFILE_DIR'],
  rateLimit: (process.env['BENCH_RATE_LIMIT'] ?? 'on') !== 'off',
  /** The scale phase (opt-in): records and audit entries the grown language is given before it is measured like the empty one. */
  scaleRecords: number('BENCH_SCALE_RECORDS', 10_000_000),
  scaleAudit: number('BENCH_SCALE_AUDIT', 40_000_000),
  /** The scale phase's single writes a second (16 connections, BENCH_DURATION_S long: a fixed number of writes). */
  scaleWriteRate: number('BENCH_SCALE_WRITE_RATE', 200),
  /** Lines of the scale phase's bulk file, and feed entries it reads, in each language. */
  scaleBulkLines: number('BENCH_SCALE_BULK_LINES', 100_000),
  scaleFeedEntries: number('BENCH_SCALE_FEED_ENTRIES', 100_000),
  /** When set, the bench database is left behind (its name is logged), to look into a figure with psql afterwards. */
  keepDatabase: Boolean(process.env['BENCH_KEEP_DATABASE']),
};
export type BenchConfig = typeof benchConfig;
