import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { addressBlock } from '../auth/sign-in.guard.js';

/*
 * What a slow or idle client may hold of an API process (README, "Slow
 * clients"). Node's own request timeout is off: it would cut a bulk upload
 * that is still sending (bulk uploads end only by their idle timeout and
 * their size limit, bulk/upload-body.reader.ts). Instead:
 *
 * - headers must arrive within the server's headersTimeout (Node's check,
 *   answered here with a JSON 408);
 * - a body that a route reads as one piece must arrive within the body
 *   timeout (api/middleware/body.middleware.ts);
 * - a body still arriving once its request is answered (one the route never
 *   read) has the body timeout to finish, then the connection is closed;
 * - connections from one address that have not signed in yet are capped.
 */

/** Set on a counted connection: called once a request on it has presented valid credentials. */
const SIGNED_IN = Symbol('signed in');
/** Set on a connection refused over the cap: its requests are not handled. */
const REFUSED = Symbol('refused');

type GuardedSocket = Duplex & { [SIGNED_IN]?: () => void; [REFUSED]?: true; remoteAddress?: string };

/** How long a refused connection's request is read (and dropped) after the answer, so the client reads the 429 rather than a reset. */
const REFUSED_LINGER_MS = 1_000;

export interface ConnectionGuardOptions {
  /** The time a body still arriving after its answer gets before the connection is closed. */
  bodyTimeoutMs: number;
  headersTimeoutMs: number;
  /** Open connections per address that have not signed in; null for no cap (behind a proxy every client has its address). */
  unauthenticatedPerAddress: number | null;
}

/**
 * A request on this connection has presented valid credentials (a live
 * bearer token, client credentials, the admin password): the connection no
 * longer counts against its address's cap.
 */
export function connectionSignedIn(socket: Duplex | null | undefined): void {
  (socket as GuardedSocket | null | undefined)?.[SIGNED_IN]?.();
}

/** A complete HTTP/1.1 answer with a JSON error body, for a connection no request object can answer. */
export function rawErrorResponse(status: number, message: string, headers: Record<string, string> = {}): string {
  const body = JSON.stringify({ error: { message } });
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

export class ConnectionGuard {
  /** Open connections not signed in yet, by address block (auth/sign-in.guard.ts's unit). */
  private readonly unauthenticated = new Map<string, number>();

  constructor(private readonly options: ConnectionGuardOptions) {}

  /** Watches the server's connections and answers its client errors (headers timeout, malformed requests) with JSON. */
  attach(server: Server): void {
    server.on('connection', this.onConnection);
    server.on('clientError', this.onClientError);
  }

  /** The request listener, wrapped: requests on refused connections are dropped, late bodies are bounded. */
  handler(listener: RequestListener): RequestListener {
    return (request, response) => {
      if ((request.socket as GuardedSocket)[REFUSED]) {
        request.resume();
        return;
      }
      response.once('finish', () => this.afterAnswer(request));
      listener(request, response);
    };
  }

  private readonly onConnection = (socket: GuardedSocket) => {
    const cap = this.options.unauthenticatedPerAddress;
    if (cap === null) return;
    const key = addressBlock(socket.remoteAddress ?? '');
    const open = this.unauthenticated.get(key) ?? 0;
    if (open >= cap) {
      this.refuse(socket, cap);
      return;
    }
    this.unauthenticated.set(key, open + 1);
    const release = () => {
      if (socket[SIGNED_IN] !== release) return;
      delete socket[SIGNED_IN];
      const left = (this.unauthenticated.get(key) ?? 1) - 1;
      if (left <= 0) this.unauthenticated.delete(key);
      else this.unauthenticated.set(key, left);
    };
    socket[SIGNED_IN] = release;
    socket.once('close', release);
  };

  /** Answers 429 at once (before any request is read) and closes the connection. */
  private refuse(socket: GuardedSocket, cap: number): void {
    socket[REFUSED] = true;
    socket.end(
      rawErrorResponse(
        429,
        `Too many connections from this address that have not signed in: at most ${cap} at a time; ` +
          'close idle connections or send a valid token on them, then retry',
        { 'Retry-After': '1' },
      ),
    );
    const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
  }

  /**
   * A body the route did not read (an early answer: 401, 404, 413) is read
   * and dropped by Node after the answer, for as long as it keeps coming:
   * it gets the body timeout to end, then the connection is closed.
   */
  private afterAnswer(request: IncomingMessage): void {
    if (request.complete) return;
    const socket = request.socket;
    const cut = setTimeout(() => {
      if (!request.complete) socket.destroy();
    }, this.options.bodyTimeoutMs);
    cut.unref();
    // Both listeners go once either fires: a kept-alive connection serves many such answers.
    const settle = () => {
      clearTimeout(cut);
      request.off('end', settle);
      socket.off('close', settle);
    };
    request.once('end', settle);
    socket.once('close', settle);
  }

  /**
   * Node's answers to a request it could not read, with a JSON body like
   * every other error (Node's own have none). Written only while no answer
   * of a request has started on the connection.
   */
  private readonly onClientError = (error: Error & { code?: string }, socket: Duplex) => {
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const answer =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? rawErrorResponse(
            408,
            `The request headers did not arrive within ${seconds(this.options.headersTimeoutMs)}: send the request again`,
          )
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? rawErrorResponse(431, 'The request headers are too large')
          : rawErrorResponse(400, 'Malformed HTTP request');
    socket.end(answer, () => socket.destroy());
  };
}
