import type { IncomingMessage } from 'node:http';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { BadRequestError, HttpStatusError } from '../platform/errors.js';

/*
 * The body of a bulk upload as the service reads it: decoded (gzip or as
 * is), at most `maxBytes` once decoded, and cut when the client sends
 * nothing for `idleTimeoutMs`. Errors that end the reading ask for the
 * connection to be closed: the rest of the body is of no use.
 */

export type ContentCoding = 'identity' | 'gzip';

/** The codings a bulk upload may be sent in (RFC 9110 8.4.1: `x-gzip` is `gzip`). */
const CODINGS: Record<string, ContentCoding> = { '': 'identity', identity: 'identity', gzip: 'gzip', 'x-gzip': 'gzip' };

const CLOSE = { Connection: 'close' };

/**
 * The coding of an upload's body from its Content-Encoding header.
 * @throws {HttpStatusError} 415 for any other coding (or several).
 */
export function contentCodingOf(header: string | undefined): ContentCoding {
  const coding = CODINGS[(header ?? '').trim().toLowerCase()];
  if (coding) return coding;
  throw new HttpStatusError(
    415,
    `Unsupported content encoding '${header}': send the file as is or gzip-compressed (Content-Encoding: gzip)`,
  );
}

export const tooLargeError = (maxBytes: number) =>
  new HttpStatusError(413, `The bulk file is larger than ${maxBytes} bytes (counted after decoding): split it into several uploads`, CLOSE);

export interface UploadBodyOptions {
  coding: ContentCoding;
  idleTimeoutMs: number;
  maxBytes: number;
}

/**
 * The decoded body of `request`, as a stream to put in a pipeline. The
 * request itself is not part of that pipeline: a pipeline destroys its
 * streams when it fails, and destroying a request that has not ended
 * destroys its socket, so the client would get no answer (408, 413, ...).
 * Pass a failure of the pipeline through `uploadFailure`.
 */
export function openUploadBody(request: IncomingMessage, options: UploadBodyOptions): [Readable, ...Transform[]] {
  const stages: [Readable, ...Transform[]] = [new IdleWatchedBody(request, options.idleTimeoutMs)];
  if (options.coding === 'gzip') stages.push(createGunzip());
  stages.push(new ByteLimit(options.maxBytes));
  return stages;
}

/**
 * The error a failed reading of the body is answered with: a body that is
 * not gzip (zlib's codes) is the client's mistake, anything else stays as it is.
 */
export function uploadFailure(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (!(error instanceof Error) || typeof code !== 'string' || !code.startsWith('Z_')) return error;
  const badRequest = new BadRequestError(`The body is not valid gzip data (${error.message})`);
  Object.assign(badRequest.headers, CLOSE);
  return badRequest;
}

/** Passes at most `maxBytes` through; one byte more fails the stream with a 413. */
class ByteLimit extends Transform {
  private bytes = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) callback(tooLargeError(this.maxBytes));
    else callback(null, chunk);
  }
}

/**
 * The request's bytes, failing with a 408 when the client has sent nothing
 * for `idleTimeoutMs` while the service was ready for more. Time the service
 * spends on what it already has (the stream is paused) is not idle time.
 */
class IdleWatchedBody extends Readable {
  private waitingSince: number | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly request: IncomingMessage,
    private readonly idleTimeoutMs: number,
  ) {
    super();
    request.on('data', this.onData);
    request.on('end', this.onEnd);
    request.on('error', this.onGone);
    request.on('close', this.onClose);
    // Checked often enough that a cut comes at most a quarter of the timeout (or a second) late.
    this.timer = setInterval(this.check, Math.min(1_000, Math.max(25, idleTimeoutMs / 4)));
    this.timer.unref();
  }

  override _read(): void {
    this.waitingSince ??= Date.now();
    this.request.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    clearInterval(this.timer);
    this.request.off('data', this.onData);
    this.request.off('end', this.onEnd);
    this.request.off('error', this.onGone);
    this.request.off('close', this.onClose);
    // Whatever else arrives is read and dropped (the answer closes the connection when it matters).
    this.request.on('error', () => undefined);
    this.request.resume();
    callback(error);
  }

  private readonly onData = (chunk: Buffer) => {
    if (this.push(chunk)) {
      this.waitingSince = Date.now();
      return;
    }
    // The pipeline is busy with what it has: not the client's time.
    this.request.pause();
    this.waitingSince = null;
  };

  private readonly onEnd = () => {
    clearInterval(this.timer);
    this.push(null);
  };

  // Nobody is left to read the answer; the error only ends the work.
  private readonly onGone = () => this.destroy(new BadRequestError('The upload ended before its body was complete'));

  private readonly onClose = () => {
    if (!this.request.complete) this.onGone();
  };

  private readonly check = () => {
    if (this.waitingSince === null || Date.now() - this.waitingSince < this.idleTimeoutMs) return;
    const seconds = Math.round(this.idleTimeoutMs / 100) / 10;
    this.destroy(
      new HttpStatusError(
        408,
        `No data received for ${seconds} s: the upload was cut and nothing of it is kept; send the file again`,
        CLOSE,
      ),
    );
  };
}
