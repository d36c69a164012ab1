import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { json, operationsOf } from './components.js';
import { z } from './zod-openapi.js';

/** Health probes, metrics and this description itself. */
export function registerOperationsPaths(registry: OpenAPIRegistry): void {
  // Open to all: probes and scrapers carry no credentials.
  const operation = operationsOf(registry, ['operations'], []);
  operation({
    method: 'get',
    path: '/healthz',
    operationId: 'healthz',
    summary: 'The process is up',
    responses: { 200: { description: 'Up', content: json(z.object({ status: z.literal('ok') })) } },
    errors: [],
  });
  const readiness = z
    .object({ status: z.enum(['ok', 'unavailable']), postgres: z.enum(['ok', 'unavailable']), redis: z.enum(['ok', 'unavailable']) })
    .openapi('Readiness');
  operation({
    method: 'get',
    path: '/readyz',
    operationId: 'readyz',
    summary: 'Postgres and Redis are reachable',
    responses: {
      200: { description: 'Ready', content: json(readiness) },
      503: { description: 'A dependency is unreachable', content: json(readiness) },
    },
    errors: [],
  });
  operation({
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics of this API process (no authentication, for the scraper)',
    responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } } },
    errors: [],
  });
  operation({
    method: 'get',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This description (OpenAPI 3.1)',
    responses: { 200: { description: 'The document', content: json(z.record(z.unknown())) } },
    errors: [],
  });
  operation({
    method: 'get',
    path: '/',
    operationId: 'root',
    summary: 'A page linking the API docs (/docs) and, for operators, /admin',
    responses: { 200: { description: 'HTML page', content: { 'text/html': { schema: z.string() } } } },
    errors: [],
  });
  operation({
    method: 'get',
    path: '/docs',
    operationId: 'docs',
    summary: 'This description rendered for people (Swagger UI, served by the service itself)',
    responses: { 200: { description: 'HTML page', content: { 'text/html': { schema: z.string() } } } },
    errors: [],
  });
}
