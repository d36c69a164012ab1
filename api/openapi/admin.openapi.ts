import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { auditPageSchema, auditQuerySchema, syncStatusSchema } from '../schemas/admin.schema.js';
import { errors, json, plainErrorSchema, SECURITY } from './components.js';

export function registerAdminPaths(registry: OpenAPIRegistry): void {
  const tags = ['admin'];
  const security = SECURITY.admin;
  const adminErrors = errors('adminUnauthorized', 'adminDisabled', 'serverError');

  registry.registerPath({
    method: 'get',
    path: '/admin/api/sync-status',
    operationId: 'adminSyncStatus',
    summary: 'Queued effects not yet applied, and failed work',
    tags,
    security,
    responses: { 200: { description: 'Counts', content: json(syncStatusSchema) }, ...adminErrors },
  });

  registry.registerPath({
    method: 'get',
    path: '/admin/api/audit',
    operationId: 'adminAudit',
    summary: 'Audit entries, oldest first, one per change',
    description:
      'Pages with `after`: pass the `next_after` of one page to get the next. Entries appear only once no entry with a lower `seq` can still be written, so following `next_after` never skips one.',
    tags,
    security,
    request: { query: auditQuerySchema },
    responses: {
      200: { description: 'A page of entries', content: json(auditPageSchema) },
      ...errors('badRequest', 'adminUnauthorized', 'serverError'),
      503: { description: 'ADMIN_PASSWORD is not set, or the audit log is being written (retry)', content: json(plainErrorSchema) },
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/admin/queues',
    operationId: 'adminQueueDashboard',
    summary: 'The queue dashboard (bull-board): every queue, job details, retry of failed jobs',
    description: 'An HTML application; its own assets and JSON calls live under /admin/queues/ and are not part of this description.',
    tags,
    security,
    responses: { 200: { description: 'The dashboard page', content: { 'text/html': { schema: { type: 'string' } } } }, ...adminErrors },
  });
}
