import type { OpenAPIRegistry, ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
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
import { type ErrorResponseName, json, messageErrorSchema, operationsOf, pathParams, plainErrorSchema, SECURITY } from './components.js';

type QuerySchema = NonNullable<RouteConfig['request']>['query'];

/** An admin page: HTML. */
const htmlPage = (description: string): ResponseConfig => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });

export function registerAdminPaths(registry: OpenAPIRegistry): void {
  const operation = operationsOf(registry, ['admin'], SECURITY.admin);
  const ADMIN: ErrorResponseName[] = ['adminUnauthorized', 'adminSignInBlocked', 'adminDisabled', 'serverError'];
  /** A GET that takes nothing but the admin's credentials. */
  const plainGet = (path: string, operationId: string, summary: string, ok: ResponseConfig, description?: string) =>
    operation({
      method: 'get',
      path,
      operationId,
      summary,
      ...(description === undefined ? {} : { description }),
      responses: { 200: ok },
      errors: ADMIN,
    });

  /** A GET whose query narrows what it answers: a bad query is 400. */
  const queryGet = (path: string, operationId: string, summary: string, description: string, query: QuerySchema, ok: ResponseConfig) =>
    operation({
      method: 'get',
      path,
      operationId,
      summary,
      description,
      request: { query },
      responses: { 200: ok },
      errors: ['badRequest', ...ADMIN],
    });

  plainGet('/admin/api/sync-status', 'adminSyncStatus', 'Queued effects not yet applied, and failed work', {
    description: 'Counts',
    content: json(syncStatusSchema),
  });

  operation({
    method: 'get',
    path: '/admin/api/audit',
    operationId: 'adminAudit',
    summary: 'Audit entries, oldest first, one per change',
    description:
      'Pages with `after`: pass the `next_after` of one page to get the next. Entries appear only once no entry with a lower `seq` can still be written, so following `next_after` never skips one.',
    request: { query: auditQuerySchema },
    responses: {
      200: { description: 'A page of entries', content: json(auditPageSchema) },
      503: { description: 'ADMIN_PASSWORD is not set, or the audit log is being written (retry)', content: json(plainErrorSchema) },
    },
    errors: ['badRequest', 'adminUnauthorized', 'adminSignInBlocked', 'serverError'],
  });

  const setAsideParams = pathParams({ seq: 'The `seq` of a set-aside change (a whole number; anything else is 400 `invalid_parameters`)' });
  const notSetAside = { 404: { description: 'No set-aside change has this `seq`', content: json(plainErrorSchema) } };
  const jsonOnly = {
    415: {
      description: 'The request does not say `Content-Type: application/json` (required, so no other site can make a browser send it)',
      content: json(messageErrorSchema),
    },
  };
  queryGet(
    '/admin/api/set-aside',
    'adminListSetAside',
    'Changes the worker set aside because they could not be applied, in write order',
    'Pages with `after` and `next_after`, like the audit log.',
    setAsideQuerySchema,
    { description: 'A page of set-aside changes', content: json(setAsidePageSchema) },
  );
  operation({
    method: 'post',
    path: '/admin/api/set-aside/retry',
    operationId: 'adminRetryAllSetAside',
    summary: 'Put every set-aside change (or those of a language or kind) back in line',
    request: { body: { required: true, content: json(setAsideRetryAllSchema) } },
    responses: { 200: { description: 'The changes put back in line', content: json(setAsideRetriedSchema) }, ...jsonOnly },
    errors: ['badRequest', 'tooLarge', 'bodyTimeout', ...ADMIN],
  });
  operation({
    method: 'post',
    path: '/admin/api/set-aside/{seq}/retry',
    operationId: 'adminRetrySetAside',
    summary: 'Put one set-aside change back in line, after fixing its cause',
    description: 'Send `Content-Type: application/json` (the body may be empty or `{}`).',
    request: { params: setAsideParams },
    responses: { 200: { description: 'The change is back in line', content: json(setAsideRetriedSchema) }, ...notSetAside, ...jsonOnly },
    errors: ['badRequest', ...ADMIN],
  });
  operation({
    method: 'delete',
    path: '/admin/api/set-aside/{seq}',
    operationId: 'adminDiscardSetAside',
    summary: 'Give up a set-aside change for good, with an audit entry naming the admin user',
    request: { params: setAsideParams },
    responses: { 200: { description: 'The change as it was', content: json(setAsideDiscardedSchema) }, ...notSetAside },
    errors: ['badRequest', ...ADMIN],
  });
  plainGet(
    '/admin/set-aside',
    'adminSetAsidePage',
    'The page of set-aside changes: list, retry, discard (an HTML shell over /admin/api/set-aside)',
    htmlPage('The page'),
  );

  queryGet(
    '/admin/api/accounts',
    'adminAccounts',
    'Per account: languages, records, pending changes, set-aside changes, bulk files queued and running',
    '`pending` and `set_aside` count as sync-status does; every account, by name.',
    accountsQuerySchema,
    { description: 'The accounts', content: json(accountsSchema) },
  );
  queryGet(
    '/admin/api/bulk-jobs',
    'adminListBulkJobs',
    "Every account's bulk files, newest first, with their line counts, progress and times",
    'Pages with `before`: pass the `next_before` of one page to get the next.',
    adminBulkJobsQuerySchema,
    { description: 'A page of files', content: json(adminBulkJobsPageSchema) },
  );
  operation({
    method: 'get',
    path: '/admin/api/bulk-jobs/{id}/errors',
    operationId: 'adminBulkJobErrors',
    summary: "A bulk file's line errors, in line order",
    description: 'Pages with `after` and `next_after`. An `id` that is no uuid is 400 `invalid_parameters`.',
    request: { params: pathParams({ id: 'The bulk file id' }), query: bulkErrorsQuerySchema },
    responses: {
      200: { description: 'A page of line errors', content: json(bulkErrorsPageSchema) },
      404: { description: 'No bulk file has this id', content: json(plainErrorSchema) },
    },
    errors: ['badRequest', ...ADMIN],
  });
  plainGet(
    '/admin',
    'adminHome',
    'The admin landing page: sync-status in words, counts per account, links to every admin page',
    htmlPage('The page'),
  );
  plainGet(
    '/admin/bulk-jobs',
    'adminBulkJobsPage',
    'The page of bulk files across accounts (an HTML shell over /admin/api/bulk-jobs)',
    htmlPage('The page'),
  );
  plainGet(
    '/admin/queues',
    'adminQueueDashboard',
    'The queue dashboard (bull-board): every queue, job details, retry of failed jobs',
    htmlPage('The dashboard page'),
    'An HTML application; its own assets and JSON calls live under /admin/queues/ and are not part of this description.',
  );
}
