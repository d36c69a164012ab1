import { z } from 'zod';

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === '' ? undefined : value));

const integer = (fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return fallback;
      if (!/^\d+$/.test(value)) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be an integer between ${min} and ${max}` });
        return z.NEVER;
      }
      const parsed = Number(value);
      if (parsed < min || parsed > max) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be an integer between ${min} and ${max}` });
        return z.NEVER;
      }
      return parsed;
    });

const boolean = (fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return fallback;
      if (/^(true|on|1)$/i.test(value)) return true;
      if (/^(false|off|0)$/i.test(value)) return false;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be true or false' });
      return z.NEVER;
    });

const url = (fallback: string, protocols: string[]) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      const candidate = value === undefined || value === '' ? fallback : value;
      try {
        const parsed = new URL(candidate);
        if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
        return candidate;
      } catch {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be a ${protocols.join(' or ')}// URL` });
        return z.NEVER;
      }
    });

/** A comma-separated list of URLs (empty or absent: none). */
const urlList = (protocols: string[]) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      const items = (value ?? '')
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
      for (const item of items) {
        try {
          if (!protocols.includes(new URL(item).protocol)) throw new Error('protocol');
        } catch {
          ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be comma-separated ${protocols.join(' or ')}// URLs` });
          return z.NEVER;
        }
      }
      return items;
    });

/** Where Redis is: one server (`redis://`, `rediss://`), or a cluster named by some of its nodes. */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: Array<{ host: string; port: number }>; username?: string; password?: string };

const CLUSTER_SCHEME = 'redis+cluster://';

/**
 * Reads REDIS_URL: `redis+cluster://[user:password@]host:port,host:port,...`
 * names nodes of a Redis Cluster (any of them will do; the rest are found from
 * them), anything else is one server's URL, passed to ioredis as it is.
 * @throws {Error} saying what is wrong with a cluster URL.
 */
export function redisTargetOf(url: string): RedisTarget {
  if (!url.toLowerCase().startsWith(CLUSTER_SCHEME)) return { kind: 'single', url };
  const rest = url.slice(CLUSTER_SCHEME.length).replace(/\/+$/, '');
  const at = rest.lastIndexOf('@');
  const [user = '', password] = at < 0 ? [] : rest.slice(0, at).split(/:(.*)/s);
  const nodes = (at < 0 ? rest : rest.slice(at + 1)).split(',').map((node) => {
    const match = /^(\[[0-9a-f:.]+\]|[^:/[\]]+):(\d{1,5})$/i.exec(node.trim());
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65_535) throw new Error(`"${node}" is not host:port`);
    return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
  });
  return {
    kind: 'cluster',
    nodes,
    ...(user === '' ? {} : { username: decodeURIComponent(user) }),
    ...(password === undefined ? {} : { password: decodeURIComponent(password) }),
  };
}

const redisUrl = (fallback: string) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      const candidate = value === undefined || value === '' ? fallback : value;
      try {
        if (redisTargetOf(candidate).kind === 'single' && !['redis:', 'rediss:'].includes(new URL(candidate).protocol)) throw new Error();
        return candidate;
      } catch (error) {
        const detail = error instanceof Error && error.message !== '' ? ` (${error.message})` : '';
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          message: `must be a redis:// or rediss:// URL, or redis+cluster://host:port,host:port,...${detail}`,
        });
        return z.NEVER;
      }
    });

const environmentSchema = z.object({
  DATABASE_URL: url('postgres://postgres@127.0.0.1:5432/commerce_sync', ['postgres:', 'postgresql:']),
  // Streaming read replicas of DATABASE_URL (reads/read-router.ts); none by default: every read goes to DATABASE_URL.
  DATABASE_REPLICA_URLS: urlList(['postgres:', 'postgresql:']),
  // A replica's statement (and connection) timeout: a slower answer is read again from the primary.
  REPLICA_STATEMENT_TIMEOUT_MS: integer(2_000, 10, 600_000),
  // How often each API process reads how far each replica has replayed.
  REPLICA_POLL_MS: integer(100, 10, 60_000),
  // How long an account's last write position is kept: reads after it need a replica replayed that far.
  READ_POSITION_TTL_S: integer(600, 1, 86_400),
  // One Redis (redis://, rediss://) or a Redis Cluster (redis+cluster://host:port,host:port,...): docs/operations.md.
  REDIS_URL: redisUrl('redis://127.0.0.1:6379'),
  PORT: integer(3000, 0, 65535),
  HOST: optionalString.transform((value) => value ?? '0.0.0.0'),
  TOKEN_TTL_SECONDS: integer(7200, 1, 7200),
  ADMIN_USER: optionalString.transform((value) => value ?? 'admin'),
  ADMIN_PASSWORD: optionalString,
  WORKER_CONCURRENCY: integer(4, 1, 256),
  WORKER_METRICS_PORT: integer(9100, 0, 65535),
  // How often a failed job is tried (exponential backoff from JOB_BACKOFF_MS) before it stays failed.
  JOB_ATTEMPTS: integer(8, 1, 100),
  JOB_BACKOFF_MS: integer(500, 1, 600_000),
  // Webhooks (webhooks/): deliveries in flight at once per worker process, the first retry's delay (doubling up to
  // an hour, with jitter), and WEBHOOK_ALLOW_PRIVATE=true to allow http and internal addresses (local use and tests only).
  WEBHOOK_CONCURRENCY: integer(32, 1, 1_000),
  WEBHOOK_RETRY_BASE_MS: integer(5_000, 1, 3_600_000),
  WEBHOOK_ALLOW_PRIVATE: boolean(false),
  // Retention (worker/processors/apply-retention.processor.ts), in days: audit entries (and the change feed's history)
  // in whole daily blocks, a finished bulk job's stored lines and line errors (the job and its counts stay), and
  // delivered webhook deliveries.
  AUDIT_RETENTION_DAYS: integer(90, 1, 36_500),
  BULK_RETENTION_DAYS: integer(30, 1, 36_500),
  WEBHOOK_DELIVERY_RETENTION_DAYS: integer(30, 1, 36_500),
  // Ids (stubs, links, cascaded or detached records) one applier transaction handles at most; larger changes are split.
  APPLIER_SLICE_SIZE: integer(5_000, 1, 1_000_000),
  // Changes of a language left to apply at which a bulk file stops storing lines until the applier catches up.
  BULK_MAX_EFFECTS_BACKLOG: integer(10_000, 100, 10_000_000),
  // Per-account request limits on /api/v1 and /api/v2 (auth/request-limiter.ts): RATE_LIMIT_RPS requests in
  // each second and RATE_LIMIT_BURST more per minute; an account's own override (cli set-limit) replaces both.
  // RATE_LIMIT_ENABLED=false turns the limiter off (to compare its cost, or where a proxy limits instead).
  RATE_LIMIT_ENABLED: boolean(true),
  RATE_LIMIT_RPS: integer(200, 1, 1_000_000),
  RATE_LIMIT_BURST: integer(1_000, 0, 100_000_000),
  // Failed sign-ins (token endpoint, admin Basic; auth/sign-in.guard.ts): after AUTH_FAILURE_LIMIT failures for
  // one client id (or admin user), or AUTH_ADDRESS_FAILURE_LIMIT from one address, within AUTH_FAILURE_WINDOW_S,
  // attempts get 429 until the window ends.
  AUTH_FAILURE_LIMIT: integer(10, 1, 1_000_000),
  AUTH_ADDRESS_FAILURE_LIMIT: integer(30, 1, 1_000_000),
  AUTH_FAILURE_WINDOW_S: integer(60, 1, 86_400),
  // Tokens one client may be issued within TOKEN_ISSUE_WINDOW_S (auth/token-issue.limiter.ts); one more is a 429.
  TOKEN_ISSUE_LIMIT: integer(60, 1, 1_000_000),
  TOKEN_ISSUE_WINDOW_S: integer(60, 1, 86_400),
  // Reverse proxies in front of the API that append to X-Forwarded-For (0: the peer is the client).
  TRUST_PROXY_HOPS: integer(0, 0, 10),
  // Slow clients (api/connection-guard.ts): a request's headers must arrive within HEADERS_TIMEOUT_MS, and the body
  // of any request but a bulk upload within BODY_TIMEOUT_MS of the service starting to read it; either is a 408.
  HEADERS_TIMEOUT_MS: integer(20_000, 100, 600_000),
  BODY_TIMEOUT_MS: integer(10_000, 100, 600_000),
  // Open connections from one address that have not yet signed in (no valid token or credentials on any of
  // their requests); one more is answered 429 and closed. Not applied behind proxies (TRUST_PROXY_HOPS > 0).
  UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS: integer(128, 1, 1_000_000),
  // How long one applier run of a language lasts at most before the language queues for its next turn (fair share).
  APPLIER_RUN_MS: integer(1_000, 50, 600_000),
  // Bulk uploads of one account in progress at once (across API processes); one more is a 429.
  BULK_UPLOADS_PER_ACCOUNT: integer(2, 1, 1_000),
  // An upload whose client sends nothing for this long is cut with a 408 (time the service spends storing lines does not count).
  BULK_IDLE_TIMEOUT_MS: integer(30_000, 100, 3_600_000),
  // Largest bulk file, counted after decoding (a gzip body is limited by what it unpacks to); larger is a 413.
  BULK_MAX_BYTES: integer(1024 ** 3, 1, 1024 ** 4),
  // Room in each API process for v2 list pages answered again while their language is unchanged
  // (reads/list-page-cache.ts), in MiB; 0 reads every page.
  LIST_PAGE_CACHE_MB: integer(64, 0, 65_536),
  QUEUE_PREFIX: optionalString.transform((value) => value ?? 'sync'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .optional()
    .transform((value) => value ?? 'info'),
  NODE_ENV: optionalString.transform((value) => value ?? 'development'),
});

export type Config = z.output<typeof environmentSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses an environment (normally `process.env`) into the typed configuration.
 * @throws {ConfigError} naming every variable that is wrong.
 */
export function parseConfig(environment: Record<string, string | undefined>): Config {
  const result = environmentSchema.safeParse(environment);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
}

let cached: Config | undefined;

/** The process configuration, parsed once from `process.env`. This is the only reader of `process.env`. */
export function loadConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  if (Object.keys(overrides).length > 0) return parseConfig({ ...process.env, ...overrides });
  cached ??= parseConfig(process.env);
  return cached;
}
