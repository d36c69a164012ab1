import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Delivery {
  type: string;
  data?: { record_id: string; action: string }[];
}

/**
 * A webhook receiver for the bench: answers 200 at once, counts the entries
 * it was sent, and notes when each record's first entry of `action` arrived.
 */
export class BenchReceiver {
  entries = 0;
  deliveries = 0;
  /** Arrival (performance.now()) of each record's first entry of the watched action. */
  readonly arrivals = new Map<string, number>();
  private watched: string | null = null;
  private server: Server | null = null;

  async listen(): Promise<string> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const at = performance.now();
        response.writeHead(200).end();
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Delivery;
        if (body.type !== 'changes' || !body.data) return;
        this.deliveries += 1;
        this.entries += body.data.length;
        if (this.watched === null) return;
        for (const entry of body.data)
          if (entry.action === this.watched && !this.arrivals.has(entry.record_id)) this.arrivals.set(entry.record_id, at);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
  }

  /** Starts noting arrivals of `action` entries (and forgets earlier ones). */
  watch(action: string): void {
    this.watched = action;
    this.arrivals.clear();
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
