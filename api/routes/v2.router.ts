import { parseEnvelope } from '../../catalogue/envelope.schema.js';
import { languageWriteValidators } from '../../catalogue/language.schema.js';
import { KINDS, LINE_LISTS, LINK_WRITERS, type LineParent, RECORD_KINDS, STORED_KINDS } from '../../catalogue/record-kinds.js';
import type { FeedWaiter } from '../../feed/feed.waiter.js';
import { LanguageNotFoundError } from '../../platform/errors.js';
import { getLanguage, listLanguages } from '../../reads/language-read.service.js';
import { getRecord, listLines, listRecords, listSubListing, presentStored, type SubListing } from '../../reads/read.service.js';
import type { ListJson, ReadContext } from '../../reads/read-context.js';
import { listAttributeDefinitions, saveAttributeDefinition } from '../../records/attribute-definition.service.js';
import { deleteLanguage, saveLanguage } from '../../records/language.service.js';
import { deleteLine, putLine } from '../../records/order-lines.service.js';
import { changeLink, removeRecord, storeRecord } from '../../records/record.service.js';
import { type AppContext, principalOf } from '../context.js';
import { refuseLongPathIds } from '../middleware/path-ids.middleware.js';
import { registerV2Paths } from '../openapi/v2.openapi.js';
import { registerOpenApi } from '../openapi.js';
import { addBulkRoutes } from './bulk.router.js';
import { addErasureRoutes } from './erasures.router.js';
import { addFeedRoutes } from './feed.router.js';
import { type ShopDependencies, shopRouter } from './shop-router.js';
import { addWebhookRoutes } from './webhooks.router.js';

/** What v2 needs beyond what v1 does: the feed's waiter and the webhooks' address rule. */
export interface V2Dependencies extends ShopDependencies {
  /** Where the change feed's long polls wait (feed/feed.waiter.ts). */
  waiter: FeedWaiter;
  /** WEBHOOK_ALLOW_PRIVATE: webhooks may call http and internal addresses (interface §23.6). */
  webhookAllowPrivate: boolean;
}

registerOpenApi('v2', registerV2Paths);

/** Kinds with GET one (global unsubscribes are read through their list only). */
export const V2_READABLE = [...RECORD_KINDS, 'purchase_event'] as const;
/** Kinds with DELETE (global unsubscribes and purchase events have none: interface §16, §17). */
export const V2_DELETABLE = RECORD_KINDS;

/**
 * /api/v2 (interface §8.1, §8, §13-21): PUT upserts of every kind
 * returning the bare record in its v2 shape, 204 deletes, link and line
 * writers, paginated lists and sub-lists, the account's languages and
 * attribute definitions, bulk files of v2 bodies. Routes come from the catalogue's tables: a new kind
 * or link is a row there, not a route here.
 */
export function v2Router(deps: V2Dependencies) {
  const { db, copyPool, notifier, languages, reads, waiter, uploads, webhookAllowPrivate } = deps;
  const { router, body, writing } = shopRouter('/api/v2', deps);
  /** A write's own reads: on the primary. */
  const reading = (ctx: AppContext): ReadContext => ({ ...reads.primary, languages, accountId: principalOf(ctx).accountId });
  /** A GET's read: on a replica that has the account's writes, or the primary. */
  const routed = <T>(ctx: AppContext, read: (context: ReadContext) => Promise<T>): Promise<T> => {
    const accountId = principalOf(ctx).accountId;
    return reads.read(accountId, (target) => read({ ...target, languages, accountId }));
  };
  const param = (ctx: AppContext, name: string) => ctx.params[name]!;
  const query = (ctx: AppContext) => ({ ...ctx.query }) as Record<string, unknown>;
  /** Lists arrive serialised (their JSON is built by the database). */
  const sendList = (ctx: AppContext, json: ListJson) => {
    ctx.type = 'application/json';
    ctx.body = json;
  };

  router.get('/languages', async (ctx: AppContext) => {
    sendList(ctx, await routed(ctx, (context) => listLanguages(context, query(ctx))));
  });

  router.put('/languages', body, async (ctx: AppContext) => {
    const input = parseEnvelope('language', ctx.request.body, languageWriteValidators.v2);
    ctx.body = await saveLanguage(writing(ctx), input);
  });

  router.get('/languages/:language_id', async (ctx: AppContext) => {
    ctx.body = await routed(ctx, (context) => getLanguage(context, param(ctx, 'language_id')));
  });

  router.delete('/languages/:language_id', async (ctx: AppContext) => {
    const languageId = param(ctx, 'language_id');
    if (!(await deleteLanguage(writing(ctx), languageId))) throw new LanguageNotFoundError(languageId);
    ctx.status = 204;
  });

  router.put('/custom_attributes', body, async (ctx: AppContext) => {
    ctx.body = await saveAttributeDefinition(db, principalOf(ctx).accountId, ctx.request.body);
  });

  router.get('/custom_attributes', async (ctx: AppContext) => {
    ctx.body = await routed(ctx, (context) => listAttributeDefinitions(context.db, context.accountId, query(ctx)));
  });

  addBulkRoutes(router, { db, copyPool, notifier, uploads }, 'v2');
  addFeedRoutes(router, { db, waiter });
  addWebhookRoutes(router, { db, allowPrivate: webhookAllowPrivate, body });
  addErasureRoutes(router, { writing, body });

  for (const kind of STORED_KINDS) {
    const { segment } = KINDS[kind];
    router.put(`/languages/:language_id/${segment}`, body, async (ctx: AppContext) => {
      const languageId = param(ctx, 'language_id');
      const { record } = await storeRecord(writing(ctx), languageId, kind, ctx.request.body, 'v2');
      ctx.body = await presentStored(reading(ctx), languageId, kind, record);
    });
  }

  for (const kind of V2_DELETABLE) {
    router.delete(`/languages/:language_id/${KINDS[kind].segment}/:record_id`, async (ctx: AppContext) => {
      await removeRecord(writing(ctx), param(ctx, 'language_id'), kind, param(ctx, 'record_id'));
      ctx.status = 204;
    });
  }

  // The sub-listings of a parent record: each path, its listing and the parameter naming the parent.
  const subListings: Array<[string, SubListing, string]> = [
    ['/languages/:language_id/products/:product_id/variants', 'product-variants', 'product_id'],
    ['/languages/:language_id/products/:product_id/categories', 'product-categories', 'product_id'],
    ['/languages/:language_id/products/:product_id/relevant_products', 'relevant-products', 'product_id'],
    ['/languages/:language_id/categories/:category_id/products', 'category-products', 'category_id'],
    ['/languages/:language_id/brands/:brand_id/products', 'brand-products', 'brand_id'],
  ];
  for (const [path, listing, parent] of subListings) {
    router.get(path, async (ctx: AppContext) => {
      sendList(
        ctx,
        await routed(ctx, (context) => listSubListing(context, param(ctx, 'language_id'), listing, param(ctx, parent), query(ctx))),
      );
    });
  }

  for (const [segment, link] of Object.entries(LINK_WRITERS)) {
    const path = `/languages/:language_id/products/:product_id/${segment}/:other_id`;
    for (const [method, action] of [
      ['put', 'assign'],
      ['delete', 'unassign'],
    ] as const) {
      router[method](path, async (ctx: AppContext) => {
        await changeLink(writing(ctx), param(ctx, 'language_id'), link, param(ctx, 'product_id'), param(ctx, 'other_id'), action);
        ctx.status = 204;
      });
    }
  }

  for (const parent of Object.keys(LINE_LISTS) as LineParent[]) {
    const base = `/languages/:language_id/${KINDS[parent].segment}/:parent_id/products`;
    router.get(base, async (ctx: AppContext) => {
      sendList(
        ctx,
        await routed(ctx, (context) => listLines(context, param(ctx, 'language_id'), parent, param(ctx, 'parent_id'), query(ctx))),
      );
    });
    const putLineRoute = async (ctx: AppContext) => {
      const parentId = param(ctx, 'parent_id');
      const line = await putLine(writing(ctx), param(ctx, 'language_id'), parent, parentId, param(ctx, 'product_id'), ctx.request.body);
      if (!line) {
        ctx.status = 204;
        return;
      }
      ctx.body = {
        order_id: parentId,
        product_id: line.id,
        quantity: line.quantity,
        variant_id: line.variant_id,
        custom_attributes: line.custom_attributes ?? [],
      };
    };
    // A cart line is only its product: its PUT takes no body, so one that is sent is neither read nor refused.
    if (parent === 'order') router.put(`${base}/:product_id`, body, putLineRoute);
    else router.put(`${base}/:product_id`, putLineRoute);
    router.delete(`${base}/:product_id`, async (ctx: AppContext) => {
      await deleteLine(writing(ctx), param(ctx, 'language_id'), parent, param(ctx, 'parent_id'), param(ctx, 'product_id'));
      ctx.status = 204;
    });
  }

  for (const kind of STORED_KINDS) {
    router.get(`/languages/:language_id/${KINDS[kind].segment}`, async (ctx: AppContext) => {
      sendList(ctx, await routed(ctx, (context) => listRecords(context, param(ctx, 'language_id'), kind, query(ctx))));
    });
  }
  for (const kind of V2_READABLE) {
    router.get(`/languages/:language_id/${KINDS[kind].segment}/:record_id`, async (ctx: AppContext) => {
      ctx.body = await routed(ctx, (context) => getRecord(context, param(ctx, 'language_id'), kind, param(ctx, 'record_id')));
    });
  }

  refuseLongPathIds(router);
  return router;
}
