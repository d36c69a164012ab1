import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';

/** Idle connections are closed after this long: below the 5 s a Node receiver keeps one open by default. */
const IDLE_MS = 4_000;
/** Sets of addresses kept; the least recently used goes first. */
const MAX_AGENTS = 256;
/** Idle connections kept per set of addresses. */
const MAX_IDLE_SOCKETS = 4;

/**
 * The worker's keep-alive connections to receivers: one agent per protocol
 * and set of addresses a host resolved to, so that a connection is reused
 * only for a delivery whose host was resolved and checked just now and gave
 * the very addresses the connection went to (interface §23.6). Built at
 * start-up, closed with the worker.
 */
export class DeliveryAgents {
  private readonly agents = new Map<string, http.Agent>();

  agentFor(protocol: string, addresses: readonly LookupAddress[]): http.Agent {
    const key = `${protocol}${addresses
      .map(({ address }) => address)
      .sort()
      .join(',')}`;
    const known = this.agents.get(key);
    if (known) {
      this.agents.delete(key);
      this.agents.set(key, known);
      return known;
    }
    const options = { keepAlive: true, maxFreeSockets: MAX_IDLE_SOCKETS, timeout: IDLE_MS };
    const agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    this.agents.set(key, agent);
    if (this.agents.size > MAX_AGENTS) {
      const [oldest, dropped] = this.agents.entries().next().value!;
      this.agents.delete(oldest);
      // Its requests in flight finish; their connections then close when idle.
      for (const sockets of Object.values(dropped.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    }
    return agent;
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}
