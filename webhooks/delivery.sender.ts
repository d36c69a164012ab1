import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { DeliveryAgents } from './delivery-agents.js';
import { parseDestination, resolveSafely, UnsafeDestinationError } from './url-guard.js';

/** No answer within this long counts as a failure (interface §23.4). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Only this much of an answer is read (interface §23.6). */
export const ANSWER_READ_BYTES = 64 * 1024;

export interface SendOutcome {
  /** The answer's status, or null when nothing answered. */
  statusCode: number | null;
  /** Why it failed, in words safe to show the account (no address, no stack). */
  error: string | null;
  durationMs: number;
}

/** Errors of a reused connection the receiver closed meanwhile: the request is made again once, on a new one. */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/**
 * POSTs one signed body. The host is resolved and checked at each delivery,
 * and the connection goes to the addresses checked, so a name that resolves
 * to an internal address now is refused even if it did not at registration
 * (interface §23.6). With `agents`, an open connection is reused only when
 * it goes to the very addresses just checked (delivery-agents.ts); without,
 * each request has a connection of its own. Redirects are answers like any
 * other (not 2xx: a failure), never followed. The answer's first 64 KiB are
 * read, the rest dropped with the connection.
 */
export async function sendDelivery(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { allowPrivate: boolean; timeoutMs?: number; agents?: DeliveryAgents | undefined },
): Promise<SendOutcome> {
  const started = performance.now();
  const done = (statusCode: number | null, error: string | null): SendOutcome => ({
    statusCode,
    error,
    durationMs: Math.round(performance.now() - started),
  });
  const destination = parseDestination(url, options.allowPrivate);
  if (!destination) return done(null, 'the URL may not be called');
  let addresses: LookupAddress[];
  try {
    addresses = await resolveSafely(destination.hostname, options.allowPrivate);
  } catch (error) {
    return done(null, error instanceof UnsafeDestinationError ? error.message : 'the host could not be resolved');
  }
  // The lookup a connection uses gives the addresses just checked: no second resolution that could answer otherwise.
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
  const transport = destination.protocol === 'https:' ? https : http;
  const pooled = options.agents?.agentFor(destination.protocol, addresses);
  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    let request: http.ClientRequest | undefined;
    const finish = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const timer = setTimeout(() => {
      finish(done(null, `no answer within ${Math.round((options.timeoutMs ?? DELIVERY_TIMEOUT_MS) / 1000)} s`));
      request?.destroy();
    }, options.timeoutMs ?? DELIVERY_TIMEOUT_MS);
    const send = (agent: http.Agent | false) => {
      let answered = false;
      const sent = transport.request(
        destination,
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
          lookup,
          agent,
        },
        (response) => {
          answered = true;
          let read = 0;
          response.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read >= ANSWER_READ_BYTES) {
              finish(done(response.statusCode ?? null, null));
              response.destroy();
            }
          });
          response.on('end', () => finish(done(response.statusCode ?? null, null)));
          response.on('error', () => finish(done(response.statusCode ?? null, null)));
        },
      );
      request = sent;
      sent.on('error', (error: NodeJS.ErrnoException) => {
        if (!settled && !answered && agent !== false && sent.reusedSocket && STALE_CONNECTION.has(error.code ?? '')) {
          send(false);
          return;
        }
        const why = error instanceof UnsafeDestinationError ? error.message : `connection failed (${error.code ?? 'error'})`;
        finish(done(null, why));
      });
      sent.end(body);
    };
    send(pooled ?? false);
  });
}
