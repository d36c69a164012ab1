import { constants } from 'node:zlib';
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
    });
}
