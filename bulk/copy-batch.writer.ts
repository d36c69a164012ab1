import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/** COPY rows gathered before they are sent to Postgres as one batch. */
export const COPY_BATCH_BYTES = 1024 * 1024;

/**
 * Writes COPY text rows to Postgres in batches, each one `COPY` on a pooled
 * connection taken for that batch only. An upload whose client stalls holds
 * rows in memory, never a connection, so slow or stalled uploads cannot take
 * the pool from the others. One batch is copied while the next fills; when
 * both are full the writer stops taking rows, which pauses the upload
 * (backpressure).
 *
 * Rows (strings or bytes) are written into two buffers that are used again
 * and again, so a file of any size costs two batches of memory and leaves
 * no garbage behind. A row larger than a batch is sent alone.
 *
 * Each batch commits on its own: the caller makes the rows visible (or
 * removes them) as a whole through the row they belong to.
 */
export class CopyBatchWriter extends Writable {
  private filling: Buffer | undefined;
  private used = 0;
  private readonly free: Buffer[] = [];
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly copySql: string,
    private readonly batchBytes = COPY_BATCH_BYTES,
  ) {
    super({ decodeStrings: false });
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const length = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    if (this.used + length <= this.batchBytes) {
      this.append(chunk);
      callback();
      return;
    }
    this.send()
      .then(async () => {
        if (length <= this.batchBytes) this.append(chunk);
        else await this.sendAlone(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      })
      .then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.send()
      .then(() => this.inFlight)
      .then(() => callback(), callback);
  }

  private append(chunk: Buffer | string) {
    this.filling ??= this.free.pop() ?? Buffer.allocUnsafeSlow(this.batchBytes);
    this.used += typeof chunk === 'string' ? this.filling.write(chunk, this.used) : chunk.copy(this.filling, this.used);
  }

  /** Starts copying the batch gathered so far, once the previous one is stored. */
  private async send(): Promise<void> {
    await this.inFlight;
    const buffer = this.filling;
    if (!buffer || this.used === 0) return;
    const rows = buffer.subarray(0, this.used);
    this.filling = undefined;
    this.used = 0;
    // The buffer is filled again only once Postgres has taken all of it (the COPY has ended).
    this.dispatch(this.copy(rows).then(() => void this.free.push(buffer)));
  }

  private async sendAlone(rows: Buffer): Promise<void> {
    await this.inFlight;
    this.dispatch(this.copy(rows));
  }

  private dispatch(copying: Promise<void>) {
    this.inFlight = copying;
    // Awaited by the next send or by _final; a failure meanwhile must not count as unhandled.
    copying.catch(() => undefined);
  }

  private async copy(rows: Buffer): Promise<void> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      await pipeline(Readable.from([rows]), client.query(copyFrom(this.copySql)));
    } catch (error) {
      failure = error as Error;
      throw error;
    } finally {
      // A connection whose COPY broke is not given back to the pool.
      client.release(failure);
    }
  }
}
