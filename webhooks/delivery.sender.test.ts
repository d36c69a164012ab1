import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sendDelivery } from './delivery.sender.js';
import { DeliveryAgents } from './delivery-agents.js';

/*
 * The sender against a real receiver on the loopback (allowPrivate, as for
 * local use): which connections deliveries go over.
 */

interface Receiver {
  port: number;
  /** TCP connections accepted, and requests answered. */
  connections: number;
  answered: number;
  close(): Promise<void>;
}

/** A receiver answering 200; with `dropReused`, a second request on one connection has its connection cut instead. */
async function receiver(dropReused = false): Promise<Receiver> {
  const served = new WeakSet<object>();
  const state = { connections: 0, answered: 0 };
  const server = http.createServer((request, response) => {
    if (dropReused && served.has(request.socket)) {
      request.socket.destroy();
      return;
    }
    served.add(request.socket);
    request.resume();
    request.on('end', () => {
      state.answered += 1;
      response.end('ok');
    });
  });
  server.on('connection', () => {
    state.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    get answered() {
      return state.answered;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const send = (url: string, agents: DeliveryAgents) =>
  sendDelivery(url, { 'webhook-id': 'msg_1' }, '{"type":"changes"}', { allowPrivate: true, agents });

describe('when deliveries go to one receiver with the worker’s agents', () => {
  it('should send them over one kept connection', async () => {
    const target = await receiver();
    const agents = new DeliveryAgents();
    cleanups.push(
      () => agents.close(),
      () => target.close(),
    );
    for (let index = 0; index < 5; index += 1) expect((await send(`http://127.0.0.1:${target.port}/hook`, agents)).statusCode).toBe(200);
    expect(target.answered).toBe(5);
    expect(target.connections).toBe(1);
  });

  it('should keep the connections of other addresses apart, each reused only for its own', async () => {
    const target = await receiver();
    const agents = new DeliveryAgents();
    cleanups.push(
      () => agents.close(),
      () => target.close(),
    );
    for (let index = 0; index < 3; index += 1) {
      expect((await send(`http://127.0.0.1:${target.port}/hook`, agents)).statusCode).toBe(200);
      expect((await send(`http://127.0.0.2:${target.port}/hook`, agents)).statusCode).toBe(200);
    }
    expect(target.answered).toBe(6);
    expect(target.connections).toBe(2);
  });

  it('should send a delivery again on a new connection when the kept one was closed by the receiver', async () => {
    const target = await receiver(true);
    const agents = new DeliveryAgents();
    cleanups.push(
      () => agents.close(),
      () => target.close(),
    );
    expect((await send(`http://127.0.0.1:${target.port}/hook`, agents)).statusCode).toBe(200);
    const second = await send(`http://127.0.0.1:${target.port}/hook`, agents);
    expect(second).toMatchObject({ statusCode: 200, error: null });
    // The kept connection, cut at the second request, and the new one that request went again on.
    expect(target.answered).toBe(2);
    expect(target.connections).toBe(2);
  });
});

describe('when deliveries go without agents', () => {
  it('should open a connection for each', async () => {
    const target = await receiver();
    cleanups.push(() => target.close());
    for (let index = 0; index < 3; index += 1) {
      const outcome = await sendDelivery(`http://127.0.0.1:${target.port}/hook`, {}, '{}', { allowPrivate: true });
      expect(outcome.statusCode).toBe(200);
    }
    expect(target.connections).toBe(3);
  });
});
