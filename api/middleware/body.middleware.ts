import { isUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';
import type { Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import getRawBody from 'raw-body';
import { type AppError, BadRequestError, HttpStatusError } from '../../platform/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../platform/json-nesting.js';
import type { AppContext } from '../context.js';

/** The largest body of a single request, counted after decoding (a gzip body is limited by what it unpacks to). */
const BODY_LIMIT_BYTES = 1024 * 1024;

interface BodyOptions {
  /** How long the whole body may take to arrive once it is read (BODY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Also accept application/x-www-form-urlencoded. */
  form?: boolean;
  /** Turns a parse failure into the error the route's clients expect (a `timeout` closes the connection, whatever it says). */
  onError?: (kind: 'malformed' | 'too_large' | 'unsupported' | 'timeout', detail: string) => AppError;
}

/** A body cut for its slowness: the rest of it is of no use, so the connection is closed with the answer. */
const CLOSE_CONNECTION = { Connection: 'close' };

const defaultOnError: NonNullable<BodyOptions['onError']> = (kind, detail) => {
  switch (kind) {
    case 'too_large':
      return new HttpStatusError(413, 'Request body is larger than 1 MiB');
    case 'unsupported':
      return new HttpStatusError(415, detail);
    case 'malformed':
      return new BadRequestError(detail);
    case 'timeout':
      return new HttpStatusError(408, detail, CLOSE_CONNECTION);
  }
};

const NOT_UTF8 = 'Request body is not valid UTF-8';
const TOO_DEEP = `Request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of arrays and objects`;

/**
 * Parses JSON (and optionally form) bodies of at most 1 MiB. A body of any
 * other type is refused with 415; a request without a body gets
 * `ctx.request.body === undefined`, which the route reports as missing. A
 * body that has not arrived within `timeoutMs` is a 408 (the route never
 * runs), so a slow client cannot hold a request open.
 *
 * The bytes are checked before anything is parsed: a body that is not valid
 * UTF-8 is refused (decoding would turn each bad byte into U+FFFD, and two
 * different ids into one), and so is a JSON body nested more than
 * MAX_JSON_DEPTH levels, found by a linear scan that stops at the first level
 * too deep (JSON.parse would take about a second over the deepest body that
 * fits in 1 MiB, and serve nothing else meanwhile).
 */
export function bodyMiddleware(options: BodyOptions) {
  const onError = options.onError ?? defaultOnError;
  const accepted = options.form ? ['json', 'urlencoded'] : ['json'];
  const malformed = `Malformed request body: ${options.form ? 'expected JSON or form data' : 'expected valid JSON'}`;
  const timeoutMessage = `The request body did not arrive within ${options.timeoutMs / 1000} s: send the request again`;
  const parse = koaBody({
    json: true,
    urlencoded: options.form ?? false,
    text: false,
    multipart: false,
    jsonStrict: false,
    jsonLimit: BODY_LIMIT_BYTES,
    formLimit: BODY_LIMIT_BYTES,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    // A `__proto__` key is refused (co-body's default), never kept: code that copies the body could set a prototype.
    onError: () => {
      throw onError('malformed', malformed);
    },
  });
  return async (ctx: AppContext, next: Next) => {
    const hasBody = ctx.request.length > 0 || ctx.get('transfer-encoding') !== '';
    if (hasBody && !ctx.is(...accepted)) {
      throw onError(
        'unsupported',
        `Unsupported content type: send ${options.form ? 'application/json or application/x-www-form-urlencoded' : 'application/json'}`,
      );
    }
    if (!hasBody) {
      ctx.request.body = undefined;
      return next();
    }
    const bytes = await withinTimeout(readBody(ctx, onError, malformed), options.timeoutMs, () => {
      const error = onError('timeout', timeoutMessage);
      Object.assign(error.headers, CLOSE_CONNECTION);
      return error;
    });
    if (!isUtf8(bytes)) throw onError('malformed', NOT_UTF8);
    if (bytes.length === 0) {
      ctx.request.body = undefined;
      return next();
    }
    if (ctx.is('json') && nestsDeeperThan(bytes.toString('utf8'))) throw onError('malformed', TOO_DEEP);
    // koa-body parses the bytes that were checked: it reads them from a stream standing in for the request's,
    // which is put back before the route runs (the socket, the address and the headers stay the request's own).
    const request = ctx.req;
    ctx.req = replay(request, bytes);
    try {
      await parse(ctx, async () => {});
    } finally {
      ctx.req = request;
    }
    return next();
  };
}

/** A stream of `bytes` with the request's headers, the body now as is (already decoded) and of its real length. */
function replay(request: AppContext['req'], bytes: Buffer): AppContext['req'] {
  const stream = Readable.from([bytes]) as unknown as AppContext['req'];
  stream.headers = { ...request.headers, 'content-encoding': 'identity', 'content-length': String(bytes.length) };
  return stream;
}

/** The body's bytes, decoded from its Content-Encoding, at most BODY_LIMIT_BYTES. */
async function readBody(ctx: AppContext, onError: NonNullable<BodyOptions['onError']>, malformed: string): Promise<Buffer> {
  const coding = (ctx.get('content-encoding') || 'identity').trim().toLowerCase();
  let stream: Readable;
  switch (coding) {
    case 'identity':
      stream = ctx.req;
      break;
    case 'gzip':
    case 'x-gzip':
    case 'deflate':
      stream = ctx.req.pipe(createUnzip());
      break;
    case 'br':
      stream = ctx.req.pipe(createBrotliDecompress());
      break;
    default:
      throw onError('malformed', `Unsupported content encoding '${coding.slice(0, 32)}': send the body as is, or gzip, deflate or br`);
  }
  try {
    // The announced length is checked against the limit before a byte is read, and against what arrives.
    return await getRawBody(stream, {
      limit: BODY_LIMIT_BYTES,
      ...(coding === 'identity' && ctx.request.length ? { length: ctx.request.length } : {}),
    });
  } catch (error) {
    if ((error as { status?: number }).status === 413) throw onError('too_large', 'Request body is larger than 1 MiB');
    throw onError('malformed', malformed);
  }
}

/** `reading`'s bytes, or the timeout's error once `timeoutMs` have passed first (the read is left to fail with the connection). */
async function withinTimeout(reading: Promise<Buffer>, timeoutMs: number, timeout: () => AppError): Promise<Buffer> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([reading, expired]);
    if (outcome === 'expired') {
      reading.catch(() => undefined);
      throw timeout();
    }
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}
