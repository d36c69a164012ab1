import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { readEntriesAfter } from '../feed/feed.reader.js';
import { encodeFeedCursor } from '../feed/feed-cursor.js';
import type { Database } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import {
  leasePair,
  markDelivered,
  markDeliveredThenStep,
  markFailed,
  movePosition,
  type NewDelivery,
  nextStep,
  type Pair,
  type PairTarget,
  type ReadAhead,
  releasePair,
  storeDelivery,
  type Undelivered,
} from './delivery.repository.js';
import { sendDelivery } from './delivery.sender.js';
import type { DeliveryAgents } from './delivery-agents.js';
import { retryDelayMs } from './retry-delay.js';
import { signatureHeader } from './webhook-secret.js';

/** Entries in one delivery at most (interface §23.2). */
export const DELIVERY_MAX_ENTRIES = 100;
/** Failing this long disables a webhook (interface §23.4). */
export const DISABLE_AFTER_MS = 24 * 3_600_000;
/** How long one run keeps sending, so that a pair with a long backlog takes turns with the others. */
const RUN_MS = 1_000;
/**
 * After sending a delivery that held every entry there was, a run waits this
 * long before making the next: a steady flow of writes then goes out in a few
 * deliveries a second, not in one per commit (each costs the same six
 * statements and a request however few entries it holds).
 */
export const GATHER_MS = 200;

export interface DeliveryOptions {
  allowPrivate: boolean;
  retryBaseMs: number;
  /** The process's keep-alive connections to receivers (none: a connection per request). */
  agents?: DeliveryAgents;
}

/**
 * Delivers a webhook's entries of one language (interface §23.2-23.4): holding
 * the pair, sends its oldest undelivered delivery when due; when none waits,
 * puts the next up to 100 entries after its position into a new delivery
 * (moving the position with it, in one statement) and sends that. While a
 * delivery is in flight, the next one's entries are read, if it would be the
 * only one waiting behind it; the 2xx is recorded, that delivery stored (the
 * position moved with it) and the next step read in one statement, and it
 * is sent then. After one that took every entry there was, the run waits
 * GATHER_MS. A failure ends the run, leaving what was read ahead unstored:
 * nothing later is sent before it is answered 2xx.
 * @returns whether the pair may have more to send now.
 */
export async function deliverPair(db: Database, pair: Pair, options: DeliveryOptions, logger: Logger): Promise<boolean> {
  const token = randomUUID();
  if ((await leasePair(db, pair, token)) === null) return false;
  try {
    const until = performance.now() + RUN_MS;
    let step = await nextStep(db, pair, token);
    // The delivery stored with the step, when it is the next to send (its body is not read back).
    let next: Made | null = null;
    for (;;) {
      if (!step?.target) return false;
      const { target } = step;
      // A delivery already made is sent as it is; whether it was full is not known, so it counts as full.
      let made: Made = { delivery: step.waiting, position: step.after, full: true };
      if (!made.delivery && next) made = next;
      else if (!made.delivery) {
        if (!target.changes) return false;
        const read = await readNext(db, pair, target, step.after);
        const stored = read.delivery
          ? await storeDelivery(db, pair, token, read.delivery, read.position)
          : read.position > step.after && (await movePosition(db, pair, token, read.position));
        made = stored ? toSend(read) : { delivery: null, position: step.after, full: false };
      }
      const waiting = made.delivery;
      if (!waiting?.due) return false;
      const readAhead = target.changes && made.full && step.undelivered + (next ? 1 : 0) <= 1;
      const [sent, ahead] = await Promise.allSettled([
        attempt(db, pair, target, waiting, options, logger),
        readAhead ? readNext(db, pair, target, made.position, made.backlog) : Promise.resolve(null),
      ]);
      if (sent.status === 'rejected') throw sent.reason;
      if (ahead.status === 'rejected') throw ahead.reason;
      // A failure: what was read ahead is not stored, so its entries stay above the position for the next run.
      if (sent.value === null) return false;
      const delivered = { id: waiting.id, statusCode: sent.value };
      next = null;
      if (!made.full) {
        // Marked at once, not after the wait: the delivery log shows it delivered when it was.
        await markDelivered(db, pair, delivered.id, delivered.statusCode);
        if (performance.now() + GATHER_MS >= until) return true;
        await setTimeout(GATHER_MS);
        step = await nextStep(db, pair, token);
      } else {
        const after = await markDeliveredThenStep(db, pair, token, delivered, ahead.value);
        if (after?.stored && ahead.value) next = toSend(ahead.value);
        step = after;
        if (performance.now() >= until) return true;
      }
    }
  } finally {
    await releasePair(db, pair, token);
  }
}

/** A delivery to send (or none), the pair's position after it, and whether it holds as many entries as a delivery may. */
interface Made {
  delivery: Undelivered | null;
  position: number;
  full: boolean;
  /** The horizon read up to, when entries below it were left for the next delivery. */
  backlog?: number | undefined;
}

/** The entries after a position, made into a delivery's body (not stored yet). */
interface Read extends ReadAhead {
  full: boolean;
  backlog: number | undefined;
}

const toSend = (read: Read): Made => ({
  delivery: read.delivery && { id: read.delivery.id, body: read.delivery.body, attempts: 0, due: true },
  position: read.position,
  full: read.full,
  backlog: read.backlog,
});

/**
 * Reads the entries after `after` and makes the next delivery of them. With
 * `backlog` (a horizon the delivery before left entries below), the entries
 * are read up to it, without reading the horizon again; only when they do
 * not fill a delivery are they read up to the horizon of now. No delivery
 * when every entry read was of other kinds (the position still passes them).
 */
async function readNext(db: Database, pair: Pair, target: PairTarget, after: number, backlog?: number): Promise<Read> {
  const span = { langKey: pair.langKey, languageId: target.language_id, after };
  const options = { limit: DELIVERY_MAX_ENTRIES, kinds: target.kinds ?? undefined };
  let read = backlog === undefined ? undefined : await readEntriesAfter(db, span, { ...options, through: backlog });
  if (!read?.hasMore) read = await readEntriesAfter(db, span, options);
  if (read.rows.length === 0) return { delivery: null, position: read.next, full: false, backlog: undefined };
  const nextCursor = encodeFeedCursor({ langKey: pair.langKey, languageId: target.language_id, seq: read.next });
  // The entries are JSON text already (feed/feed.repository.ts); the body is assembled around them, not re-serialised.
  const body = `{"type":"changes","webhook_id":${JSON.stringify(pair.webhookId)},"language_id":${JSON.stringify(target.language_id)},"data":[${read.rows.map((row) => row.entry).join(',')}],"next_cursor":${JSON.stringify(nextCursor)}}`;
  const delivery: NewDelivery = {
    id: randomUUID(),
    languageId: target.language_id,
    entries: read.rows.length,
    firstSeq: read.rows[0]!.seq,
    lastSeq: read.rows.at(-1)!.seq,
    body,
  };
  return {
    delivery,
    position: read.next,
    full: read.rows.length === DELIVERY_MAX_ENTRIES,
    backlog: read.hasMore ? read.through : undefined,
  };
}

/**
 * Sends one delivery once. A failure is recorded here; a 2xx is recorded by
 * the caller (with its next step, in one statement).
 * @returns the 2xx status code, or null when it failed.
 */
async function attempt(
  db: Database,
  pair: Pair,
  target: PairTarget,
  { id, body, attempts }: Undelivered,
  options: DeliveryOptions,
  logger: Logger,
): Promise<number | null> {
  const timestamp = Math.floor(Date.now() / 1000);
  const secrets = target.previous_secret ? [target.secret, target.previous_secret] : [target.secret];
  const headers = {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
  const outcome = await sendDelivery(target.url, headers, body, { allowPrivate: options.allowPrivate, agents: options.agents });
  if (outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300) return outcome.statusCode;
  const error = outcome.error ?? `answered ${outcome.statusCode}`;
  await markFailed(db, pair, id, {
    statusCode: outcome.statusCode,
    error,
    retryMs: retryDelayMs(attempts, options.retryBaseMs),
    disableReason: outcome.statusCode === 410 ? 'the receiver answered 410 Gone' : null,
    disableAfterMs: DISABLE_AFTER_MS,
  });
  logger.info({ webhook_id: pair.webhookId, delivery_id: id, status_code: outcome.statusCode, err: error }, 'webhook delivery failed');
  return null;
}
