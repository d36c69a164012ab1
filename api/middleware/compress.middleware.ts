import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Next } from 'koa';
import compress from 'koa-compress';
import type { AppContext } from '../context.js';

/**
 * The types whose answers are compressed (interface §10.4): JSON (records,
 * lists, jobs, the OpenAPI description), NDJSON (line errors) and the text
 * of /docs (its page, script and styles). Images and anything else go as they are.
 */
const COMPRESSED_TYPES = /^(?:application\/(?:json|x-ndjson|ndjson|jsonl)|text\/(?:html|css|javascript|plain))$/;

/** Answers smaller than this go as they are: compressing them saves less than it costs. */
export const COMPRESS_THRESHOLD_BYTES = 1024;

/**
 * The compressors' cheapest settings: a list page (JSON of repeated keys)
 * compresses nearly as well at these as at zlib's defaults (gzip 6, brotli 4)
 * for a third or less of the CPU, which was a large part of the API's CPU
 * per page (docs/decisions.md, "Compression levels").
 */
export const GZIP_LEVEL = 1;
export const BROTLI_QUALITY = 1;

/**
 * Compresses answers for clients that accept it (gzip or br, by the client's
 * preference), with `Vary: Accept-Encoding` on every answer. Request bodies
 * (uploads) are not touched. A streamed answer (no length known: line errors,
 * /docs assets) is flushed at each chunk it is written in, so a reader gets
 * each chunk as it is produced rather than when the compressor's buffer fills.
 */
export function compressMiddleware() {
  const compressor = compress({
    filter: (type) => COMPRESSED_TYPES.test(type),
    threshold: COMPRESS_THRESHOLD_BYTES,
    gzip: (_type, size) => (size === undefined ? { level: GZIP_LEVEL, flush: constants.Z_SYNC_FLUSH } : { level: GZIP_LEVEL }),
    br: (_type, size) => ({
      params: {
        [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
        ...(size === undefined ? {} : { [constants.BROTLI_PARAM_SIZE_HINT]: size }),
      },
      ...(size === undefined ? { flush: constants.BROTLI_OPERATION_FLUSH } : {}),
    }),
    // deflate is named ambiguously by clients (zlib or raw); zstd is experimental in Node 24.
    deflate: false,
    zstd: false,
  });
  return (ctx: AppContext, next: Next) =>
    compressor(ctx as never, async () => {
      await next();
      // An object body is serialised here, once: measuring it (koa-compress reads its length) would
      // serialise it, and sending it serialise it again.
      const { body } = ctx;
      if (body !== null && typeof body === 'object' && (Array.isArray(body) || Object.getPrototypeOf(body) === Object.prototype))
        ctx.body = JSON.stringify(body);
      compressInPlace(ctx);
    });
}

/**
 * Answers held whole in memory up to this size are compressed in one call on
 * the request's own turn; koa-compress (which then finds the answer encoded
 * and leaves it) streams larger ones and streamed ones through the zlib thread
 * pool. A stream per answer (its handle, its Transform and the chunks through
 * it) cost the API more than compressing a list page at level 1 itself.
 */
const IN_PLACE_MAX_BYTES = 256 * 1024;

/** The statuses that carry no body. */
const EMPTY_STATUSES = new Set([204, 205, 304]);

/** koa-compress's own checks for an answer it would compress, for an answer held in memory (a string or a Buffer). */
function compressInPlace(ctx: AppContext): void {
  const { body } = ctx;
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) return;
  const size = ctx.response.length;
  if (size === undefined || size < COMPRESS_THRESHOLD_BYTES || size > IN_PLACE_MAX_BYTES) return;
  if (ctx.method === 'HEAD' || EMPTY_STATUSES.has(ctx.status) || ctx.status === 206 || !COMPRESSED_TYPES.test(ctx.response.type)) return;
  if (
    ctx.response.get('Content-Encoding') ||
    ctx.response.get('Content-Range') ||
    /(?:^|,)\s*no-transform\s*(?:,|$)/.test(ctx.response.get('Cache-Control'))
  )
    return;
  const encoding = acceptedEncoding(ctx.get('Accept-Encoding'));
  if (!encoding) return;
  const compressed =
    encoding === 'br'
      ? brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: size } })
      : gzipSync(body, { level: GZIP_LEVEL });
  // Koa keeps the type already set and sets the length of the new body.
  ctx.body = compressed;
  ctx.set('Content-Encoding', encoding);
}

/**
 * The encoding koa-compress would pick for an Accept-Encoding header: br or
 * gzip, the one of the higher q (br on a tie, as browsers get it), gzip for
 * `*`, none for an absent header or when neither is accepted.
 */
export function acceptedEncoding(header: string): 'br' | 'gzip' | undefined {
  if (!header) return undefined;
  const q: Record<string, number> = {};
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().split(';');
    const weight = params.map((param) => param.trim()).find((param) => param.startsWith('q='));
    const value = weight === undefined ? 1 : Number(weight.slice(2));
    q[name.trim().toLowerCase()] = Number.isNaN(value) ? 0 : value;
  }
  const wildcard = q['*'];
  const br = q['br'] ?? 0;
  const gzip = q['gzip'] ?? (wildcard !== undefined && wildcard > 0 && q['br'] === undefined ? wildcard : 0);
  if (br <= 0 && gzip <= 0) return undefined;
  return br >= gzip ? 'br' : 'gzip';
}
