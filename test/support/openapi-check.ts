import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formatsPlugin from 'ajv-formats';
import { OpenAPIBackend, type Operation } from 'openapi-backend';

/*
 * Every response the component tests receive through the harness's
 * `request` is checked against the service's own /openapi.json by
 * openapi-backend (routing by path template, response schemas compiled by
 * Ajv for JSON Schema 2020-12, which OpenAPI 3.1 uses). A response the
 * document does not describe fails the test that received it: an
 * undocumented status, an undocumented media type, a body where none is
 * documented, or a JSON body its schema refuses.
 */

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Served by mounted apps or static files that the document names but does not describe (see test/openapi.test.ts). */
const OUTSIDE_THE_DOCUMENT = [/^\/docs\/[^/]+$/, /^\/admin\/queues\/.+/];

export class UndocumentedResponseError extends Error {}

const backends = new Map<string, Promise<OpenAPIBackend>>();

/** null where no API answers (a worker's metrics server): nothing to check against. */
async function backendFor(baseUrl: string): Promise<OpenAPIBackend | null> {
  const response = await fetch(`${baseUrl}/openapi.json`);
  const text = await response.text();
  if (response.status !== 200) return null;
  let backend = backends.get(text);
  if (!backend) {
    backend = (async () => {
      const api = new OpenAPIBackend({
        definition: JSON.parse(text),
        // The document itself is checked by Redocly's linter (test/openapi.test.ts); openapi-backend's own document check is for 3.0.
        quick: true,
        // Response bodies only; OpenAPI 3.1 schemas are JSON Schema 2020-12.
        customizeAjv: () => {
          const ajv = new Ajv2020({ strict: false, allErrors: true });
          // ajv-formats is CommonJS: its plugin is the module's default export.
          (formatsPlugin as unknown as { default: (instance: Ajv2020) => void }).default(ajv);
          return ajv as never;
        },
      });
      await api.init();
      return api;
    })();
    backends.set(text, backend);
  }
  return backend;
}

const documents = new Map<string, Promise<OpenAPIBackend | null>>();

/**
 * openapi-backend's router compiles a regular expression for every operation
 * of the document on every call (about 2 ms here, for some 200 operations),
 * which made the check a quarter of a request's cost in the long tests. Tests
 * ask for the same few paths again and again, so the answers are kept, per
 * document, up to a bound.
 */
const matches = new WeakMap<OpenAPIBackend, Map<string, Operation | undefined>>();
const MATCH_CACHE_SIZE = 20_000;

function matchOperation(api: OpenAPIBackend, method: string, path: string): Operation | undefined {
  let cache = matches.get(api);
  if (!cache) {
    cache = new Map();
    matches.set(api, cache);
  }
  const key = `${method} ${path}`;
  if (cache.has(key)) return cache.get(key);
  const operation = api.router.matchOperation({ method, path, headers: {}, query: {} }) as Operation | undefined;
  if (cache.size >= MATCH_CACHE_SIZE) cache.clear();
  cache.set(key, operation);
  return operation;
}

/** Whether the helper is on (TEST_OPENAPI_CHECK=off turns it off, e.g. to look at a response the document refuses). */
export const openApiCheckEnabled = process.env['TEST_OPENAPI_CHECK'] !== 'off';

/**
 * Checks one response against the document the API at `baseUrl` serves.
 * @throws {UndocumentedResponseError} naming the request and what the document does not describe.
 */
export async function checkResponse(
  baseUrl: string,
  method: string,
  url: string,
  response: { status: number; headers: Headers; body: unknown; text: string },
): Promise<void> {
  const lower = method.toLowerCase();
  if (!(METHODS as readonly string[]).includes(lower)) return;
  const path = new URL(url, baseUrl).pathname;
  if (OUTSIDE_THE_DOCUMENT.some((pattern) => pattern.test(path))) return;
  let backendPromise = documents.get(baseUrl);
  if (!backendPromise) {
    backendPromise = backendFor(baseUrl);
    documents.set(baseUrl, backendPromise);
  }
  const api = await backendPromise;
  if (!api) return;
  const where = `${method.toUpperCase()} ${path} answered ${response.status}`;
  const fail = (problem: string): never => {
    throw new UndocumentedResponseError(`${where}, which /openapi.json does not describe: ${problem}\n${response.text.slice(0, 500)}`);
  };
  const match = (m: string) => matchOperation(api, m, path);
  let operation = match(lower);
  if (!operation) {
    // Another method of a documented path: the path's operations document its 405.
    const sibling = METHODS.map(match).find(Boolean);
    if (!sibling) {
      // No path of the document: only the plain 404 of an unknown path is expected there, or, anywhere
      // under /admin, the guard's 401 or 429 (it answers before any route is looked up).
      if (response.status === 404 && JSON.stringify(response.body) === '{"error":"Not found"}') return;
      if (response.status === 401 && /^\/admin(\/|$)/i.test(path) && response.headers.get('www-authenticate')?.startsWith('Basic')) return;
      if (response.status === 429 && /^\/admin(\/|$)/i.test(path) && response.headers.get('retry-after')) return;
      return fail('no operation has this path');
    }
    if (response.status !== 405) return fail(`the path has no ${method.toUpperCase()} operation`);
    operation = sibling;
  }
  const responses = (operation.responses ?? {}) as Record<string, { content?: Record<string, unknown> }>;
  const status = String(response.status);
  const documented = responses[status] ?? responses[`${status[0]}XX`] ?? responses['default'];
  if (!documented) return fail(`${operation.operationId} documents ${Object.keys(responses).join(', ')}`);
  const content = documented.content;
  if (!content) {
    if (response.text !== '') fail(`${operation.operationId} documents no body for ${status}`);
    return;
  }
  const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (!(mediaType in content))
    return fail(`${operation.operationId} documents ${Object.keys(content).join(', ')} for ${status}, not ${mediaType}`);
  if (mediaType !== 'application/json') return;
  const result = api.validator.validateResponse(response.body, operation, response.status);
  if (!result.valid) fail(JSON.stringify(result.errors?.slice(0, 5)));
}

/** Hop-by-hop and framing headers a proxy must not pass on as they are. */
/** Hop-by-hop headers, and what fetch sets itself. */
const NOT_FORWARDED = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade']);
/** Also not passed back: fetch has decoded the response body already (a request body is sent as it came, still encoded). */
const NOT_PASSED_BACK = new Set([...NOT_FORWARDED, 'content-encoding']);

export interface CheckingProxy {
  /** Where clients send their requests instead of the API. */
  url: string;
  /** What /openapi.json does not describe of the responses passed on so far; take() empties it. */
  take(): string[];
  close(): Promise<void>;
}

/**
 * An HTTP proxy in front of the API at `baseUrl` that checks every response
 * it passes on, for clients that run as processes of their own (the shop's
 * command line): the harness's `request` cannot see their traffic. Requests
 * are streamed through (bulk uploads of any size); responses are read whole,
 * checked and passed on unchanged, so the client behaves as without it. What
 * the document does not describe is collected for the test to assert on.
 */
export async function startCheckingProxy(baseUrl: string): Promise<CheckingProxy> {
  const problems: string[] = [];
  const server = http.createServer((incoming, outgoing) => {
    void (async () => {
      const method = incoming.method ?? 'GET';
      const headers = new Headers();
      for (const [name, value] of Object.entries(incoming.headers))
        if (value !== undefined && !NOT_FORWARDED.has(name)) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      const hasBody = method !== 'GET' && method !== 'HEAD';
      const upstream = await fetch(`${baseUrl}${incoming.url}`, {
        method,
        headers,
        body: hasBody ? (Readable.toWeb(incoming) as ReadableStream) : undefined,
        duplex: 'half',
      } as RequestInit);
      const text = Buffer.from(await upstream.arrayBuffer());
      let body: unknown;
      try {
        body = text.length ? JSON.parse(text.toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      if (openApiCheckEnabled) {
        await checkResponse(baseUrl, method, incoming.url ?? '/', {
          status: upstream.status,
          headers: upstream.headers,
          body,
          text: text.toString('utf8'),
        }).catch((error: Error) => problems.push(error.message));
      }
      const passed: Record<string, string> = {};
      upstream.headers.forEach((value, name) => {
        if (!NOT_PASSED_BACK.has(name)) passed[name] = value;
      });
      outgoing.writeHead(upstream.status, { ...passed, 'content-length': String(text.length) });
      outgoing.end(text);
    })().catch((error: Error) => {
      problems.push(`proxy: ${incoming.method} ${incoming.url}: ${error.message}`);
      outgoing.destroy(error);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    take: () => problems.splice(0),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
