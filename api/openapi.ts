import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { registerAdminPaths } from './openapi/admin.openapi.js';
import { registerSecuritySchemes } from './openapi/components.js';
import { registerOAuthPaths } from './openapi/oauth.openapi.js';
import { registerOperationsPaths } from './openapi/operations.openapi.js';
import { registerV1Paths } from './openapi/v1.openapi.js';

/*
 * The API description (CONTRACT 10): OpenAPI 3.1 generated from the zod
 * schemas that validate requests. Each interface describes its operations in a
 * registrar; the document is the union of all registrars.
 *
 * Adding an interface takes one call, next to its router (e.g. in v2.router.ts):
 *
 *   registerOpenApi('v2', (registry) => {
 *     registry.registerPath({ method: 'get', path: '/api/v2/...', security: SECURITY.bearer,
 *       responses: { 200: {...}, ...errors('badRequest', 'unauthorized', 'serverError') } });
 *   });
 *
 * test/openapi.test.ts fails while a served route is missing from the document.
 */

export { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
export * from './openapi/components.js';
export { z } from './openapi/zod-openapi.js';

export type OpenApiRegistrar = (registry: OpenAPIRegistry) => void;

const registrars = new Map<string, OpenApiRegistrar>([
  ['oauth', registerOAuthPaths],
  ['v1', registerV1Paths],
  ['admin', registerAdminPaths],
  ['operations', registerOperationsPaths],
]);

/** Adds (or, for the same name, replaces) an interface's paths. Call at module load, before the first document is built. */
export function registerOpenApi(name: string, registrar: OpenApiRegistrar): void {
  registrars.set(name, registrar);
}

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

export function buildOpenApiDocument(): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registerSecuritySchemes(registry);
  for (const registrar of registrars.values()) registrar(registry);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Commerce data synchronisation service',
      version: '1.0.0',
      description:
        'Web shops push catalogue and customer data; marketing tools read it back. A 200 on a write means the record is durable; stubs, links, cascades and audit entries follow from the queue (GET /admin/api/sync-status shows when it has drained).',
    },
    tags: [
      { name: 'oauth', description: 'OAuth 2.0 client credentials' },
      { name: 'v1', description: 'v1: upserts and deletes of every record kind' },
      { name: 'admin', description: 'Operators: HTTP Basic with ADMIN_USER / ADMIN_PASSWORD' },
      { name: 'operations', description: 'Probes, metrics and this description' },
    ],
  });
}
