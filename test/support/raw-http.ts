import net from 'node:net';

export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: any;
  text: string;
  /** Milliseconds from the connection's start to the end of the answer. */
  ms: number;
}

export interface RawConnection {
  socket: net.Socket;
  /** Sends bytes as they are: a request may be sent in pieces, as slowly as a test likes. */
  send(data: string | Buffer): void;
  /** The first answer on the connection (a JSON body is parsed). */
  answer: Promise<RawAnswer>;
  /** Resolves with the milliseconds from the connection's start to its close (by either side). */
  closed: Promise<number>;
  close(): void;
}

/**
 * A bare TCP connection to the API, for what an HTTP client library cannot
 * do: send headers or a body a byte at a time, hold a connection without a
 * request, come from another loopback address (`localAddress`, e.g.
 * 127.0.0.2: the service counts some limits per address).
 */
export async function rawConnection(baseUrl: string, options: { localAddress?: string } = {}): Promise<RawConnection> {
  const url = new URL(baseUrl);
  const started = Date.now();
  const socket = net.connect({ host: url.hostname, port: Number(url.port), localAddress: options.localAddress });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - started)));
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    let received = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const parsed = parseAnswer(received, Date.now() - started);
      if (parsed) {
        socket.off('data', onData);
        resolve(parsed);
      }
    };
    socket.on('data', onData);
    socket.once('close', () =>
      reject(new Error(`the connection closed without a complete answer: ${JSON.stringify(received.toString())}`)),
    );
  });
  answer.catch(() => undefined);
  return {
    socket,
    send: (data) => {
      if (socket.writable) socket.write(data);
    },
    answer,
    closed,
    close: () => socket.destroy(),
  };
}

function parseAnswer(received: Buffer, ms: number): RawAnswer | null {
  const end = received.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const separator = line.indexOf(':');
    headers[line.slice(0, separator).trim().toLowerCase()] = line.slice(separator + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const bodyBytes = received.subarray(end + 4);
  if (bodyBytes.length < length) return null;
  const text = bodyBytes.subarray(0, length).toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body, text, ms };
}
