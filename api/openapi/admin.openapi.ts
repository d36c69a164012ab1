import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  auditPageSchema,
  auditQuerySchema,
  setAsideDiscardedSchema,
  setAsidePageSchema,
  setAsideQuerySchema,
  setAsideRetriedSchema,
  setAsideRetryAllSchema,
  syncStatusSchema,
} from '../schemas/admin.schema.js';
import {
  accountsQuerySchema,
  accountsSchema,
  adminBulkJobsPageSchema,
  adminBulkJobsQuerySchema,
  bulkErrorsPageSchema,
  bulkErrorsQuerySchema,
} from '../schemas/admin-overview.schema.js';
import { errors, json, messageErrorSchema, pathParams, plainErrorSchema, SECURITY } from './components.js';

export function registerAdminPaths(registry: OpenAPIRegistry): void {
  const tags = ['admin'];
  const security = SECURITY.admin;
  const ADMIN = ['adminUnauthorized', 'adminSignInBlocked', 'adminDisabled', 'serverError'] as const;
  const adminErrors = errors(...ADMIN);

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
      ...errors('badRequest', 'adminUnauthorized', 'adminSignInBlocked', 'serverError'),
      503: { description: 'ADMIN_PASSWORD is not set, or the audit log is being written (retry)', content: json(plainErrorSchema) },
    },
  });

  const setAsideParams = pathParams({ seq: 'The `seq` of a set-aside change (a whole number; anything else is 400 `invalid_parameters`)' });
  const notSetAside = { 404: { description: 'No set-aside change has this `seq`', content: json(plainErrorSchema) } };
  const jsonOnly = {
    415: {
      description: 'The request does not say `Content-Type: application/json` (required, so no other site can make a browser send it)',
      content: json(messageErrorSchema),
    },
  };
  registry.registerPath({
    method: 'get',
    path: '/admin/api/set-aside',
    operationId: 'adminListSetAside',
    summary: 'Changes the worker set aside because they could not be applied, in write order',
    description: 'Pages with `after` and `next_after`, like the audit log.',
    tags,
    security,
    request: { query: setAsideQuerySchema },
    responses: {
      200: { description: 'A page of set-aside changes', content: json(setAsidePageSchema) },
      ...errors('badRequest', ...ADMIN),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/admin/api/set-aside/retry',
    operationId: 'adminRetryAllSetAside',
    summary: 'Put every set-aside change (or those of a language or kind) back in line',
    tags,
    security,
    request: { body: { required: true, content: json(setAsideRetryAllSchema) } },
    responses: {
      200: { description: 'The changes put back in line', content: json(setAsideRetriedSchema) },
      ...errors('badRequest', 'tooLarge', 'bodyTimeout', ...ADMIN),
      ...jsonOnly,
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/admin/api/set-aside/{seq}/retry',
    operationId: 'adminRetrySetAside',
    summary: 'Put one set-aside change back in line, after fixing its cause',
    description: 'Send `Content-Type: application/json` (the body may be empty or `{}`).',
    tags,
    security,
    request: { params: setAsideParams },
    responses: {
      200: { description: 'The change is back in line', content: json(setAsideRetriedSchema) },
      ...errors('badRequest', ...ADMIN),
      ...notSetAside,
      ...jsonOnly,
    },
  });
  registry.registerPath({
    method: 'delete',
    path: '/admin/api/set-aside/{seq}',
    operationId: 'adminDiscardSetAside',
    summary: 'Give up a set-aside change for good, with an audit entry naming the admin user',
    tags,
    security,
    request: { params: setAsideParams },
    responses: {
      200: { description: 'The change as it was', content: json(setAsideDiscardedSchema) },
      ...errors('badRequest', ...ADMIN),
      ...notSetAside,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/admin/set-aside',
    operationId: 'adminSetAsidePage',
    summary: 'The page of set-aside changes: list, retry, discard (an HTML shell over /admin/api/set-aside)',
    tags,
    security,
    responses: { 200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } }, ...adminErrors },
  });

  registry.registerPath({
    method: 'get',
    path: '/admin/api/accounts',
    operationId: 'adminAccounts',
    summary: 'Per account: languages, records, pending changes, set-aside changes, bulk files queued and running',
    description: '`pending` and `set_aside` count as sync-status does; every account, by name.',
    tags,
    security,
    request: { query: accountsQuerySchema },
    responses: { 200: { description: 'The accounts', content: json(accountsSchema) }, ...errors('badRequest', ...ADMIN) },
  });
  registry.registerPath({
    method: 'get',
    path: '/admin/api/bulk-jobs',
    operationId: 'adminListBulkJobs',
    summary: "Every account's bulk files, newest first, with their line counts, progress and times",
    description: 'Pages with `before`: pass the `next_before` of one page to get the next.',
    tags,
    security,
    request: { query: adminBulkJobsQuerySchema },
    responses: { 200: { description: 'A page of files', content: json(adminBulkJobsPageSchema) }, ...errors('badRequest', ...ADMIN) },
  });
  registry.registerPath({
    method: 'get',
    path: '/admin/api/bulk-jobs/{id}/errors',
    operationId: 'adminBulkJobErrors',
    summary: "A bulk file's line errors, in line order",
    description: 'Pages with `after` and `next_after`. An `id` that is no uuid is 400 `invalid_parameters`.',
    tags,
    security,
    request: { params: pathParams({ id: 'The bulk file id' }), query: bulkErrorsQuerySchema },
    responses: {
      200: { description: 'A page of line errors', content: json(bulkErrorsPageSchema) },
      ...errors('badRequest', ...ADMIN),
      404: { description: 'No bulk file has this id', content: json(plainErrorSchema) },
    },
  });
  const page = (path: string, operationId: string, summary: string) =>
    registry.registerPath({
      method: 'get',
      path,
      operationId,
      summary,
      tags,
      security,
      responses: { 200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } }, ...adminErrors },
    });
  page('/admin', 'adminHome', 'The admin landing page: sync-status in words, counts per account, links to every admin page');
  page('/admin/bulk-jobs', 'adminBulkJobsPage', 'The page of bulk files across accounts (an HTML shell over /admin/api/bulk-jobs)');

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
