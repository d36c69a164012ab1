import { isIPv6 } from 'node:net';
import type { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { sha256 } from '../platform/crypto.js';
import { withinMs } from '../platform/redis.js';
import { limitKeySpaces, REDIS_TIMEOUT_MS } from './request-limiter.js';

/** How long an address that signed in as a subject is trusted to be that subject's own. */
const TRUSTED_FOR_S = 7 * 24 * 3_600;

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

/**
 * Slows down guessing of credentials (client secrets, the admin password)
 * while keeping a real client's lockout short (docs/decisions.md, "Limits"):
 *
 * - only failures are counted, per subject and per source address, each over
 *   a window of `windowS` seconds that starts at its first failure;
 * - past either limit, attempts are refused (429) before the credentials are
 *   looked at, until that window ends: at most `windowS` seconds after the
 *   last counted failure, however long an attack went on;
 * - an address that has signed in as the subject before (within 7 days) is
 *   not refused for the subject's failures elsewhere, so an attacker who
 *   knows a client id cannot keep that client's own hosts out; only its own
 *   address's failures count against it.
 *
 * Redis unreachable: attempts go through unchecked (counted by onUnavailable).
 */
export class SignInGuard {
  private readonly subjects: RateLimiterRedis;
  private readonly addresses: RateLimiterRedis;
  private readonly trustedPrefix: string;
  /** Trust marks this process has written lately: a dashboard's every request need not write one again. */
  private readonly recentlyTrusted = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly options: SignInGuardOptions,
  ) {
    const prefix = `${limitKeySpaces(options.prefix).signIns}:${options.name}`;
    const limiter = (kind: string, points: number) =>
      new RateLimiterRedis({
        storeClient: redis,
        keyPrefix: `${prefix}:${kind}`,
        points,
        duration: options.windowS,
        rejectIfRedisNotReady: true,
      });
    this.subjects = limiter('subject', options.subjectLimit);
    this.addresses = limiter('address', options.addressLimit);
    this.trustedPrefix = `${prefix}:trusted`;
  }

  /**
   * Seconds the attempt must wait, or null when it may try its credentials.
   * Ask before looking at them: a refused attempt learns nothing about them.
   */
  async refusal(subject: string, address: string): Promise<number | null> {
    const keys = this.keys(subject, address);
    try {
      const [bySubject, byAddress, trusted] = await withinMs(
        Promise.all([this.subjects.get(keys.subject), this.addresses.get(keys.address), this.redis.exists(keys.trusted)]),
        REDIS_TIMEOUT_MS,
      );
      const over = [
        byAddress !== null && byAddress.consumedPoints >= this.options.addressLimit ? byAddress.msBeforeNext : 0,
        bySubject !== null && bySubject.consumedPoints >= this.options.subjectLimit && trusted === 0 ? bySubject.msBeforeNext : 0,
      ];
      const waitMs = Math.max(...over);
      if (waitMs <= 0) return null;
      this.options.onRefused();
      return Math.max(1, Math.ceil(waitMs / 1000));
    } catch (error) {
      this.options.onUnavailable(error as Error);
      return null;
    }
  }

  /** Counts a failed attempt against the subject and the address. */
  async failed(subject: string, address: string): Promise<void> {
    const keys = this.keys(subject, address);
    try {
      await withinMs(Promise.all([this.subjects.penalty(keys.subject), this.addresses.penalty(keys.address)]), REDIS_TIMEOUT_MS);
    } catch (error) {
      this.options.onUnavailable(error as Error);
    }
  }

  /** Remembers the address as one of the subject's own. Failures stay counted: only time clears them. */
  async succeeded(subject: string, address: string): Promise<void> {
    const { trusted } = this.keys(subject, address);
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
    return { subject: subjectKey, address: addressKey, trusted: `${this.trustedPrefix}:${subjectKey}:${addressKey}` };
  }
}

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
