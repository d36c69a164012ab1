import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: Record<string, string>;
  text: string;
  body: any;
  /** The status this receiver answered, or null while it holds the request. */
  answered: number | null;
}

/** What the receiver answers to its n-th request (0-based): a status, or 'hang' to never answer. */
export type Answer = (index: number, request: Received) => number | 'hang';

/** A webhook receiver: a node:http server on 127.0.0.1, port 0, recording every request. */
export interface Receiver {
  url: string;
  requests: Received[];
  /** Requests answered 2xx, in the order they came. */
  accepted(): Received[];
  answer: Answer;
  close(): Promise<void>;
}

export async function startReceiver(answer: Answer = () => 200): Promise<Receiver> {
  const held: ServerResponse[] = [];
  const receiver: Receiver = {
    url: '',
    requests: [],
    accepted: () => receiver.requests.filter((request) => request.answered !== null && request.answered < 300),
    answer,
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    const received: Received = { headers, text, body: JSON.parse(text), answered: null };
    const index = receiver.requests.push(received) - 1;
    const status = receiver.answer(index, received);
    if (status === 'hang') {
      held.push(response);
      return;
    }
    received.answered = status;
    response.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
