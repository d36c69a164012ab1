import type { Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { type AppError, BadRequestError, HttpStatusError } from '../../platform/errors.js';
import type { AppContext } from '../context.js';

export const SINGLE_RECORD_LIMIT = '1mb';

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

/**
 * Parses JSON (and optionally form) bodies of at most 1 MiB. A body of any
 * other type is refused with 415; a request without a body gets
 * `ctx.request.body === undefined`, which the route reports as missing. A
 * body that has not arrived within `timeoutMs` is a 408 (the route never
 * runs), so a slow client cannot hold a request open.
 */
export function bodyMiddleware(options: BodyOptions) {
  const onError = options.onError ?? defaultOnError;
  const accepted = options.form ? ['json', 'urlencoded'] : ['json'];
  const timeoutMessage = `The request body did not arrive within ${options.timeoutMs / 1000} s: send the request again`;
  const parse = koaBody({
    json: true,
    urlencoded: options.form ?? false,
    text: false,
    multipart: false,
    jsonStrict: false,
    jsonLimit: SINGLE_RECORD_LIMIT,
    formLimit: SINGLE_RECORD_LIMIT,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
    onError: (error: Error & { status?: number }) => {
      if (error.status === 413) throw onError('too_large', 'Request body is larger than 1 MiB');
      throw onError('malformed', `Malformed request body: ${options.form ? 'expected JSON or form data' : 'expected valid JSON'}`);
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
    await withinTimeout(
      parse(ctx, async () => undefined),
      options.timeoutMs,
      () => {
        const error = onError('timeout', timeoutMessage);
        Object.assign(error.headers, CLOSE_CONNECTION);
        return error;
      },
    );
    return next();
  };
}

/** `parsing`, or the timeout's error once `timeoutMs` have passed first (the parse is left to fail with the connection). */
async function withinTimeout(parsing: Promise<unknown>, timeoutMs: number, timeout: () => AppError): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([parsing, expired]);
    if (outcome === 'expired') {
      parsing.catch(() => undefined);
      throw timeout();
    }
  } finally {
    clearTimeout(timer);
  }
}
