import pg from 'pg';
import type { Logger } from './logger.js';

/** How long a lost LISTEN connection waits before it connects again. */
const RECONNECT_MS = 1_000;

export interface ListenerOptions {
  /** The channels to LISTEN on (constants, never input). */
  channels: readonly string[];
  onNotification(payload: string | undefined): void;
  /** The connection went down or could not come up: what it would have heard meanwhile is lost. */
  onLost(): void;
  /** Logged when an open connection fails, and when one cannot be opened. */
  lostMessage: string;
  failedMessage: string;
  /** How the connection shows in pg_stat_activity. */
  applicationName?: string;
}

/**
 * One Postgres LISTEN connection that comes back a second after it is lost,
 * until closed. Its owner learns of a loss through `onLost` and asks
 * `listening` before trusting that it hears everything.
 */
export class Listener {
  private client: pg.Client | undefined;
  private up = false;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly options: ListenerOptions,
  ) {}

  /** Whether the connection is up and listening now. */
  get listening(): boolean {
    return this.up;
  }

  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    if (client) await endQuietly(client);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: this.options.applicationName });
    const retry = () => {
      this.up = false;
      this.options.onLost();
      void endQuietly(client);
      if (!this.stopped && !this.reconnectTimer) {
        this.reconnectTimer = setTimeout(() => {
          this.reconnectTimer = undefined;
          void this.connect();
        }, RECONNECT_MS);
      }
    };
    client.on('error', (error) => {
      this.logger.warn({ err: error.message }, this.options.lostMessage);
      retry();
    });
    client.on('end', retry);
    client.on('notification', (message) => this.options.onNotification(message.payload));
    try {
      await client.connect();
      for (const channel of this.options.channels) await client.query(`LISTEN ${channel}`);
      // Closed while connecting: nobody is left to end it.
      if (this.stopped) {
        await endQuietly(client);
        return;
      }
      this.client = client;
      this.up = true;
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, this.options.failedMessage);
      retry();
    }
  }
}

/** Ends a connection given up on: whatever it still says or fails with is of no interest. */
async function endQuietly(client: pg.Client): Promise<void> {
  client.removeAllListeners();
  client.on('error', () => undefined);
  await client.end().catch(() => undefined);
}
