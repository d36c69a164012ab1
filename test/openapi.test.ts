import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZodTypeAny } from 'zod';
import { QUEUE_DASHBOARD_PATH } from '../api/middleware/queue-dashboard.middleware.js';
import { tokenResponseSchema } from '../api/openapi/oauth.openapi.js';
import { v1RecordResponseSchema } from '../api/openapi/v1.openapi.js';
import {
  invalidParametersErrorSchema,
  messageErrorSchema,
  missingParametersErrorSchema,
  plainErrorSchema,
  serverErrorSchema,
  toOpenApiPath,
  unknownParametersErrorSchema,
} from '../api/openapi.js';
import { auditPageSchema, syncStatusSchema } from '../api/schemas/admin.schema.js';
import { KINDS, RECORD_KINDS, type RecordKind } from '../catalogue/record-kinds.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { checkResponse, UndocumentedResponseError } from './support/openapi-check.js';

/*
 * What the document covers: every route of every @koa/router in the app, with
 * two exceptions that are not API operations: the Swagger UI assets under
 * /docs/{asset}, and the queue dashboard's internals (its page is documented as
 * GET /admin/queues; its JSON calls and assets are a mounted app of bull-board's,
 * not a router of ours). Health probes, /metrics, /openapi.json and /docs are in
 * the document. The POST /api/v1/languages/ of interface §4.1 (with the slash) is documented as its own path.
 */
const UNDOCUMENTED = new Set(['GET /docs/{asset}']);
/** Served by mounted Koa apps rather than routers: only their entry pages are operations. */
const MOUNTED = [`GET ${QUEUE_DASHBOARD_PATH}`];
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

interface Layer {
  path: string | RegExp;
  methods: string[];
}

/** "METHOD /path" of every route the app serves, read from the routers' stacks. */
function servedOperations(env: TestEnvironment): Set<string> {
  const operations = new Set<string>(MOUNTED);
  // A routing middleware shows its router (routes()) or, when it picks one by the path's prefix, its routers (api/app.ts).
  const routers = env.api.app.middleware.flatMap((middleware) => {
    const shown = middleware as { router?: Router; routers?: Router[] };
    return shown.routers ?? (shown.router ? [shown.router] : []);
  });
  for (const router of routers) {
    for (const layer of router.stack as unknown as Layer[]) {
      if (layer.methods.length === 0 || typeof layer.path !== 'string') continue;
      const path = toOpenApiPath(layer.path);
      for (const method of layer.methods) {
        if (method === 'HEAD' || method === 'OPTIONS') continue;
        const operation = `${method} ${path}`;
        if (!UNDOCUMENTED.has(operation)) operations.add(operation);
      }
    }
  }
  return operations;
}

describe('when the API description is fetched', () => {
  let env: TestEnvironment;
  let document: any;
  let token: string;

  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
    token = await env.token();
    const response = await env.request('GET', '/openapi.json');
    expect(response.status).toBe(200);
    document = response.body;
  });
  afterAll(() => env.close());

  const documented = () =>
    new Set(
      Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((key) => METHODS.includes(key))
          .map((method) => `${method.toUpperCase()} ${path}`),
      ),
    );

  it('should be OpenAPI 3.1 without authentication', async () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.title).toBeTruthy();
  });

  it('should describe every route the app serves', () => {
    const missing = [...servedOperations(env)].filter((operation) => !documented().has(operation)).sort();
    expect(missing, 'routes missing from /openapi.json: describe them with registerOpenApi() from api/openapi.ts').toEqual([]);
  });

  it('should describe no route the app does not serve', () => {
    const served = servedOperations(env);
    expect([...documented()].filter((operation) => !served.has(operation)).sort()).toEqual([]);
    expect(served.size).toBeGreaterThan(20);
  });

  it("should pass Redocly's recommended lint rules with no error, and warn only of the trailing slash of interface §4.1 and the license", async () => {
    const directory = await mkdtemp(path.join(tmpdir(), 'openapi-'));
    try {
      const file = path.join(directory, 'openapi.json');
      await writeFile(file, JSON.stringify(document));
      const cli = path.resolve('node_modules/@redocly/cli/bin/cli.js');
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [cli, 'lint', file, '--config', path.resolve('redocly.yaml'), '--format', 'json'],
        { maxBuffer: 64 * 1024 * 1024 },
      ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
      const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
        totals: { errors: number };
        problems: Array<{ severity: string; message: string; ruleId: string }>;
      };
      const errors = report.problems.filter((problem) => problem.severity === 'error').map((problem) => problem.message);
      expect(errors).toEqual([]);
      expect(report.totals.errors).toBe(0);
      // docs/decisions.md, "The document is the wire": the path interface §4.1 spells with a slash, and no license for a private project.
      const warnings = report.problems
        .filter((problem) => problem.severity === 'warn')
        .map((problem) => `${problem.ruleId}: ${problem.message}`);
      expect(warnings.sort()).toEqual([
        'info-license: Info object should contain `license` field.',
        'no-path-trailing-slash: `/api/v1/languages/` should not have a trailing slash.',
      ]);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120_000);

  it('should declare every tag it uses, a server, security on every operation and a description on each', () => {
    const declared = new Set((document.tags as Array<{ name: string }>).map((tag) => tag.name));
    expect(document.servers.length).toBeGreaterThan(0);
    for (const { path: route, method, operation } of operations()) {
      for (const tag of operation.tags ?? []) expect(declared.has(tag), `${method} ${route} tag ${tag}`).toBe(true);
      expect(Array.isArray(operation.security), `${method} ${route} security`).toBe(true);
      expect(operation.description, `${method} ${route}`).toBeTruthy();
      expect(operation.responses['405'], `${method} ${route} 405`).toBeDefined();
    }
    for (const route of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs'])
      expect(document.paths[route].get.security).toEqual([]);
  });

  it('should give URL fields a uri format and nullable enums a null', () => {
    expect(document.components.schemas.ProductV2.properties.url).toMatchObject({ format: 'uri' });
    const gender = document.components.schemas.ProfileV1.properties.gender;
    expect(JSON.stringify(gender)).toContain('"null"');
    const writeUrl = document.components.schemas.ProductV1Write.properties.url;
    expect(JSON.stringify(writeUrl)).toContain('"uri"');
  });

  describe('when a response is not what the document describes', () => {
    const response = (status: number, body: unknown, type = 'application/json') => ({
      status,
      headers: new Headers({ 'content-type': type }),
      body,
      text: body === undefined ? '' : JSON.stringify(body),
    });
    it.each([
      ['an undocumented status', 'GET', '/api/v2/languages/nl/products/p1', response(418, { error: 'teapot' })],
      ['a body its schema refuses', 'GET', '/api/v2/languages/nl/products/p1', response(200, { id: 1 })],
      ['a missing required key', 'GET', '/healthz', response(200, {})],
      ['an undocumented media type', 'GET', '/api/v2/languages/nl/products/p1', response(200, '<p/>', 'text/html')],
      ['a body where none is documented', 'DELETE', '/api/v2/languages/nl/products/p1', response(204, { id: 'p1' })],
      ['a path the document does not have', 'GET', '/api/v3/things', response(200, {})],
      ['a method the path does not have, answered other than 405', 'PATCH', '/api/v2/languages/nl/products', response(200, {})],
    ])('should fail the test for %s', async (_case, method, route, answer) => {
      await expect(checkResponse(env.baseUrl, method, route, answer)).rejects.toBeInstanceOf(UndocumentedResponseError);
    });

    it('should accept what the document describes', async () => {
      await checkResponse(env.baseUrl, 'GET', '/healthz', response(200, { status: 'ok' }));
      await checkResponse(env.baseUrl, 'DELETE', '/api/v2/languages/nl/products/p1', response(204, undefined));
      await checkResponse(env.baseUrl, 'GET', '/nowhere', response(404, { error: 'Not found' }));
    });
  });

  it('should give every operation an id, and ids should be unique', () => {
    const ids = Object.values(document.paths as Record<string, Record<string, any>>).flatMap((item) =>
      METHODS.filter((method) => item[method]).map((method) => item[method].operationId as string),
    );
    expect(ids.every(Boolean)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  const operations = () =>
    Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] })),
    );

  it('should document 401 with a challenge and 500 on every operation behind a token or admin credentials', () => {
    for (const { path, method, operation } of operations()) {
      const schemes = (operation.security ?? []).flatMap((requirement: object) => Object.keys(requirement));
      if (!schemes.includes('bearerAuth') && !schemes.includes('adminBasic')) continue;
      const context = `${method.toUpperCase()} ${path}`;
      expect(operation.responses['401'], context).toBeDefined();
      expect(operation.responses['401'].headers['WWW-Authenticate'], context).toBeDefined();
      expect(operation.responses['500'], context).toBeDefined();
      if (schemes.includes('adminBasic')) expect(operation.responses['503'], context).toBeDefined();
    }
  });

  it('should document 400, 413 and 415 on every JSON write', () => {
    for (const { path, method, operation } of operations()) {
      if (!operation.requestBody?.content?.['application/json'] || path === '/oauth/token') continue;
      for (const status of ['400', '413', '415']) expect(operation.responses[status], `${method} ${path} ${status}`).toBeDefined();
    }
  });

  it.each(RECORD_KINDS)('should take the %s write body from the schema that validates it', (kind) => {
    const operation = document.paths[`/api/v1/languages/{language_id}/${KINDS[kind].segment}`].post;
    const envelope = operation.requestBody.content['application/json'].schema;
    expect(envelope.required).toEqual([kind]);
    expect(envelope.additionalProperties).toBe(false);
    const record = document.components.schemas[envelope.properties[kind].$ref.split('/').pop()];
    const shape = (KINDS[kind].schema as unknown as { shape: Record<string, ZodTypeAny> }).shape;
    expect(Object.keys(record.properties).sort()).toEqual(Object.keys(shape).sort());
    const required = Object.entries(shape)
      .filter(([, field]) => !field.isOptional())
      .map(([name]) => name);
    expect((record.required ?? []).sort()).toEqual(required.sort());
  });

  it('should list every error body as a component', () => {
    for (const name of [
      'MissingParametersError',
      'UnknownParametersError',
      'InvalidParametersError',
      'MessageError',
      'PlainError',
      'ServerError',
      'OAuthError',
    ]) {
      expect(document.components.schemas[name], name).toBeDefined();
    }
  });

  describe('when real answers are checked against the documented schemas', () => {
    const minimal: Record<RecordKind, Record<string, unknown>> = {
      brand: { id: 'B1', name: 'Brand' },
      category: { id: 'C1', name: 'Category' },
      product: { id: 'P1', name: 'Product', category_ids: ['C1'] },
      variant: { id: 'V1', product_id: 'P1' },
      review: { id: 'R1', product_id: 'P1', profile_id: 'U1' },
      profile: { id: 'U1', email: 'u1@example.com' },
      order: { id: 'O1', profile_id: 'U1', products: [{ id: 'P1', quantity: 2 }] },
      shopping_cart: { id: 'S1', profile_id: 'U1', product_ids: ['P1'] },
    };

    beforeAll(async () => {
      const created = await env.request('POST', '/api/v1/languages', {
        token,
        body: { language: { id: 'oa', name: 'OpenAPI', code: 'oa' } },
      });
      expect(created.status).toBe(200);
    });

    it.each(RECORD_KINDS)('should answer a %s write with exactly the documented record', async (kind) => {
      const response = await env.request('POST', `/api/v1/languages/oa/${KINDS[kind].segment}`, { token, body: { [kind]: minimal[kind] } });
      expect(response.status, response.text).toBe(200);
      const parsed = v1RecordResponseSchema(kind).strict().safeParse(response.body[kind]);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    });

    const errorCases: Array<[string, () => Promise<{ status: number; body: unknown }>, number, ZodTypeAny]> = [
      [
        'a missing field',
        () => env.request('POST', '/api/v1/languages/oa/products', { token, body: { product: { id: 'X' } } }),
        400,
        missingParametersErrorSchema,
      ],
      [
        'an unknown field',
        () => env.request('POST', '/api/v1/languages/oa/products', { token, body: { product: { id: 'X', name: 'X', colour: 'red' } } }),
        400,
        unknownParametersErrorSchema,
      ],
      [
        'an invalid field',
        () => env.request('POST', '/api/v1/languages/oa/products', { token, body: { product: { id: 'X', name: 'X', price: 'cheap' } } }),
        400,
        invalidParametersErrorSchema,
      ],
      [
        'malformed JSON',
        () =>
          env.request('POST', '/api/v1/languages/oa/products', {
            token,
            raw: '{"product":',
            headers: { 'content-type': 'application/json' },
          }),
        400,
        messageErrorSchema,
      ],
      [
        'no token',
        () => env.request('POST', '/api/v1/languages/oa/products', { body: { product: { id: 'X', name: 'X' } } }),
        401,
        plainErrorSchema,
      ],
      [
        'an unknown language',
        () => env.request('POST', '/api/v1/languages/zz/products', { token, body: { product: { id: 'X', name: 'X' } } }),
        404,
        messageErrorSchema,
      ],
      ['an unknown record', () => env.request('DELETE', '/api/v1/languages/oa/products/nope', { token }), 404, plainErrorSchema],
      [
        'a body over 1 MiB',
        () => env.request('POST', '/api/v1/languages/oa/products', { token, body: { product: { id: 'X', name: 'x'.repeat(1_100_000) } } }),
        413,
        messageErrorSchema,
      ],
      [
        'a body that is not JSON',
        () => env.request('POST', '/api/v1/languages/oa/products', { token, raw: 'id=1', headers: { 'content-type': 'text/plain' } }),
        415,
        messageErrorSchema,
      ],
      ['admin without credentials', () => env.request('GET', '/admin/api/sync-status'), 401, plainErrorSchema],
      [
        'a bad audit limit',
        () => env.request('GET', '/admin/api/audit?limit=0', { headers: env.adminHeaders }),
        400,
        invalidParametersErrorSchema,
      ],
      ['sync-status', () => env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders }), 200, syncStatusSchema.strict()],
      ['the audit log', () => env.request('GET', '/admin/api/audit', { headers: env.adminHeaders }), 200, auditPageSchema.strict()],
      [
        'a token request',
        async () => {
          const client = await env.newClient();
          return env.request('POST', '/oauth/token', {
            body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
          });
        },
        200,
        tokenResponseSchema.strict(),
      ],
    ];

    it.each(errorCases)('should answer %s with the documented body', async (_, send, status, schema) => {
      const response = await send();
      expect(response.status).toBe(status);
      const parsed = schema.safeParse(response.body);
      expect(parsed.success, JSON.stringify(response.body).slice(0, 300)).toBe(true);
    });

    it('should keep the documented 500 body to the generic message', () => {
      expect(serverErrorSchema.safeParse({ error: 'The request cannot be processed at this moment' }).success).toBe(true);
      expect(serverErrorSchema.safeParse({ error: 'relation "records" does not exist' }).success).toBe(false);
    });
  });
});

describe('when /docs is opened', () => {
  let env: TestEnvironment;
  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
  });
  afterAll(() => env.close());

  it('should serve a page whose every asset comes from the service itself', async () => {
    const page = await env.request('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const references = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(references.length).toBeGreaterThanOrEqual(4);
    for (const reference of references) {
      expect(reference, reference).toMatch(/^\/docs\//);
      const asset = await env.request('GET', reference);
      expect(asset.status, reference).toBe(200);
      expect(asset.headers.get('content-type'), reference).toMatch(/^(text\/css|text\/javascript|image\/png)/);
    }
    const init = await env.request('GET', '/docs/init.js');
    expect(init.text).toContain("url: '/openapi.json'");
  });

  it.each(['/docs/package.json', '/docs/..%2Fpackage.json', '/docs/index.html'])(
    'should serve nothing else from node_modules (%s)',
    async (path) => {
      const response = await env.request('GET', path);
      expect(response.status).toBe(404);
    },
  );
});
