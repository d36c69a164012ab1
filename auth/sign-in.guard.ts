import { randomUUID } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { sha256 } from '../platform/crypto.js';
import { type RedisClient, withinMs } from '../platform/redis.js';
import { limitKeySpaces, REDIS_TIMEOUT_MS } from './request-limiter.js';

/** How long an address that signed in as a subject is trusted to be that subject's own. */
const TRUSTED_FOR_S = 7 * 24 * 3_600;

/** How long an attempt in progress holds its place at most (one whose API process died gives it back then). */
const IN_PROGRESS_MS = 30_000;

/** Seconds an attempt refused for the attempts in progress (not for failures) is asked to wait. */
const IN_PROGRESS_RETRY_S = 1;

/*
 * One attempt, atomically: refused while the failures of its subject (unless
 * its address is trusted) or of its address have reached their limit, or
 * would with the attempts already in progress; else it takes a place among
 * those in progress, before its credentials are looked at.
 * KEYS: subject failures, address failures, subject attempts, address
 * attempts (sorted sets: attempt id by start time), trusted mark.
 * ARGV: subject limit, address limit, attempt id, IN_PROGRESS_MS.
 * Returns {0, 0} (go on), {1, ms} (failures: wait ms), {2, 0} (in progress).
 */
const ATTEMPT_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local inProgressMs = tonumber(ARGV[4])
local trusted = redis.call('EXISTS', KEYS[5]) == 1
local function state(failures, attempts)
  redis.call('ZREMRANGEBYSCORE', attempts, '-inf', now - inProgressMs)
  return tonumber(redis.call('GET', failures) or '0'), redis.call('ZCARD', attempts)
end
local subjectFailed, subjectTrying = state(KEYS[1], KEYS[3])
local addressFailed, addressTrying = state(KEYS[2], KEYS[4])
local subjectLimit, addressLimit = tonumber(ARGV[1]), tonumber(ARGV[2])
local waitMs = 0
if addressFailed >= addressLimit then waitMs = math.max(waitMs, redis.call('PTTL', KEYS[2]), 1) end
if not trusted and subjectFailed >= subjectLimit then waitMs = math.max(waitMs, redis.call('PTTL', KEYS[1]), 1) end
if waitMs > 0 then return {1, waitMs} end
if addressFailed + addressTrying >= addressLimit or (not trusted and subjectFailed + subjectTrying >= subjectLimit) then
  return {2, 0}
end
for i = 3, 4 do
  redis.call('ZADD', KEYS[i], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[i], inProgressMs)
end
return {0, 0}
`;

/*
 * The end of an admitted attempt: it leaves those in progress and, when its
 * credentials were wrong, counts as a failure of its subject and address,
 * each over a window that starts at its first failure.
 * KEYS: as ATTEMPT_SCRIPT's first four. ARGV: attempt id, 1 when it failed, window ms.
 */
const SETTLE_SCRIPT = `
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if ARGV[2] == '1' then
  for i = 1, 2 do
    redis.call('INCR', KEYS[i])
    if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
  end
end
return 0
`;

export interface SignInGuardOptions {
  /** Redis key prefix (QUEUE_PREFIX) and which sign-in this guards (`oauth_token`, `admin`). */
  prefix: string;
  name: string;
  /** Failures for one subject (client id, admin user), from every address, within a window. */
  subjectLimit: number;
  /** Failures from one address, for any subject, within a window. */
  addressLimit: number;
  windowS: number;
  onUnavailable: (error: Error) => void;
  onRefused: () => void;
}

/** Why an attempt was refused: failures (for the rest of their window), or too many attempts in progress (a moment). */
export type Refusal = { reason: 'failures' | 'in_progress'; waitS: number };

/** An attempt the guard let through: say how it ended. */
export interface SignInAttempt {
  /** The credentials were wrong: counted as a failure. */
  failed(): Promise<void>;
  /** The credentials were right: not counted, and the address is remembered as the subject's own. */
  succeeded(): Promise<void>;
  /** The attempt ended before its credentials were judged (e.g. Postgres away): not counted. */
  abandoned(): Promise<void>;
}

/**
 * Slows down guessing of credentials (client secrets, the admin password)
 * while keeping a real client's lockout short (docs/decisions.md, "Limits"):
 *
 * - only failures are counted, per subject and per source address, each over
 *   a window of `windowS` seconds that starts at its first failure;
 * - past either limit, attempts are refused (429) before the credentials are
 *   looked at, until that window ends: at most `windowS` seconds after the
 *   last counted failure, however long an attack went on;
 * - an attempt takes its place before its credentials are looked at, in one
 *   Redis script with the check: attempts sent at once cannot all pass a
 *   check that none of them has counted in yet (docs/consistency.md,
 *   "Failed sign-ins");
 * - an address that has signed in as the subject before (within 7 days) is
 *   not refused for the subject's failures elsewhere, so an attacker who
 *   knows a client id cannot keep that client's own hosts out; only its own
 *   address's failures count against it.
 *
 * Redis unreachable: attempts go through unchecked (counted by onUnavailable).
 */
export class SignInGuard {
  private readonly space: string;
  /** Trust marks this process has written lately: a dashboard's every request need not write one again. */
  private readonly recentlyTrusted = new Map<string, number>();

  constructor(
    private readonly redis: RedisClient,
    private readonly options: SignInGuardOptions,
  ) {
    // On a Redis Cluster a script's keys must share a slot: the guard's name is the hash tag of all its keys.
    this.space = `${limitKeySpaces(options.prefix).signIns}:${redis.isCluster ? `{${options.name}}` : options.name}`;
  }

  /**
   * Lets an attempt try its credentials, or refuses it. Ask before looking
   * at them: a refused attempt learns nothing about them.
   */
  async attempt(subject: string, address: string): Promise<Refusal | SignInAttempt> {
    const keys = this.keys(subject, address);
    const id = randomUUID();
    const { subjectLimit, addressLimit } = this.options;
    let verdict: [number, number];
    try {
      verdict = (await withinMs(
        this.redis.eval(ATTEMPT_SCRIPT, 5, ...keys.counters, keys.trusted, subjectLimit, addressLimit, id, IN_PROGRESS_MS),
        REDIS_TIMEOUT_MS,
      )) as [number, number];
    } catch (error) {
      this.options.onUnavailable(error as Error);
      return UNCHECKED;
    }
    const [outcome, waitMs] = verdict;
    if (outcome === 1) {
      this.options.onRefused();
      return { reason: 'failures', waitS: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    if (outcome === 2) {
      this.options.onRefused();
      return { reason: 'in_progress', waitS: IN_PROGRESS_RETRY_S };
    }
    const settle = (failed: boolean) => this.settle(keys.counters, id, failed);
    return {
      failed: () => settle(true),
      succeeded: async () => {
        await Promise.all([settle(false), this.trust(keys.trusted)]);
      },
      abandoned: () => settle(false),
    };
  }

  private async settle(counters: string[], id: string, failed: boolean): Promise<void> {
    try {
      await withinMs(this.redis.eval(SETTLE_SCRIPT, 4, ...counters, id, failed ? 1 : 0, this.options.windowS * 1000), REDIS_TIMEOUT_MS);
    } catch (error) {
      // The attempt's place is given back when it times out (IN_PROGRESS_MS); a failure goes uncounted.
      this.options.onUnavailable(error as Error);
    }
  }

  /** Remembers the address as one of the subject's own. Failures stay counted: only time clears them. */
  private async trust(trusted: string): Promise<void> {
    const now = Date.now();
    if ((this.recentlyTrusted.get(trusted) ?? 0) > now) return;
    try {
      await withinMs(this.redis.set(trusted, '1', 'EX', TRUSTED_FOR_S), REDIS_TIMEOUT_MS);
      if (this.recentlyTrusted.size >= 10_000) this.recentlyTrusted.clear();
      this.recentlyTrusted.set(trusted, now + 60_000);
    } catch (error) {
      this.options.onUnavailable(error as Error);
    }
  }

  private keys(subject: string, address: string) {
    // Subjects are whatever a client sent (any length): hashed, so keys stay short.
    const subjectKey = sha256(subject).toString('base64url');
    const addressKey = addressBlock(address);
    return {
      counters: [
        `${this.space}:failed:subject:${subjectKey}`,
        `${this.space}:failed:address:${addressKey}`,
        `${this.space}:trying:subject:${subjectKey}`,
        `${this.space}:trying:address:${addressKey}`,
      ],
      trusted: `${this.space}:trusted:${subjectKey}:${addressKey}`,
    };
  }
}

/** An attempt let through while Redis could not be asked: nothing to settle. */
const UNCHECKED: SignInAttempt = {
  failed: async () => undefined,
  succeeded: async () => undefined,
  abandoned: async () => undefined,
};

/** Whether the guard refused the attempt. */
export const isRefusal = (verdict: Refusal | SignInAttempt): verdict is Refusal => 'waitS' in verdict;

/**
 * The unit an attacker cannot cheaply multiply: an IPv4 address (also when
 * IPv4-mapped), or the /64 of an IPv6 address (one host usually has a whole /64).
 */
export function addressBlock(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
