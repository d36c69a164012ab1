import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { ZodTypeAny } from 'zod';
import {
  ATTRIBUTE_DATATYPES,
  ATTRIBUTE_RESOURCES,
  attributeDefinitionSchema,
  attributeDefinitionWriteSchema,
} from '../../catalogue/attribute-definition.schema.js';
import { MAX_CUSTOM_ATTRIBUTES } from '../../catalogue/custom-attribute.schema.js';
import { languageSchema, languageV2WriteSchema } from '../../catalogue/language.schema.js';
import { DEFAULT_PER_PAGE, MAX_EMAILS, MAX_PER_PAGE } from '../../catalogue/list-query.schema.js';
import { KINDS, LINE_LISTS, LINK_WRITERS, type LineParent, RECORD_KINDS, STORED_KINDS } from '../../catalogue/record-kinds.js';
import { registerBulkPaths } from './bulk.openapi.js';
import { type ErrorResponseName, json, NO_CONTENT, operationsOf, pathParams, SECURITY, WRITE_ERRORS, withArticle } from './components.js';
import { registerErasurePaths } from './erasures.openapi.js';
import { registerFeedPaths } from './feed.openapi.js';
import { customAttributeSchema, lineItemSchemas, pascal, recordSchema, summaries, uri } from './v2-records.openapi.js';
import { registerWebhookPaths } from './webhooks.openapi.js';
import { z } from './zod-openapi.js';

/*
 * /api/v2 in the API description: PUT bodies from the v2 schemas that
 * validate them (record-kinds.ts), responses in the shapes of reads/v2-shapes.ts.
 */

const metaSchema = z.object({ current_page: z.number().int(), per_page: z.number().int(), total: z.number().int() }).openapi('PageMeta');

export const page = (item: ZodTypeAny) => z.object({ data: z.array(item), meta: metaSchema });

const recordPageMetaSchema = metaSchema
  .extend({
    next_cursor: z.string().nullable().openapi({
      description:
        'Pass as `cursor` for the next page (a keyset seek: a whole walk costs the same per page at the end as at the start); null on the last page',
    }),
  })
  .openapi('RecordPageMeta');

/** A page of a list of records, which also pages by cursor. */
const recordPage = (item: ZodTypeAny) => z.object({ data: z.array(item), meta: recordPageMetaSchema });

const timestampFilter = (description: string) => z.string().optional().openapi({ format: 'date-time', description });
const pageQuery = z.object({
  page: z.number().int().min(1).optional().openapi({ description: 'Page number, 1-based; a page past the end is empty', default: 1 }),
  per_page: z.number().int().min(1).max(MAX_PER_PAGE).optional().openapi({ default: DEFAULT_PER_PAGE }),
});
const listQuery = pageQuery.extend({
  created_after: timestampFilter('Only records created strictly after this instant'),
  created_before: timestampFilter('Only records created strictly before this instant'),
  updated_after: timestampFilter('Only records updated strictly after this instant'),
  updated_before: timestampFilter('Only records updated strictly before this instant'),
});

/** The lists of records also page by cursor (`meta.next_cursor`), instead of `page`. */
const recordListQuery = listQuery.extend({
  cursor: z.string().optional().openapi({
    description: 'The `meta.next_cursor` of the previous page, instead of `page`: the page right after it, however deep',
  }),
});

const LIST_ERRORS: ErrorResponseName[] = ['badRequest', 'unauthorized', 'notFound', 'serverError'];
const profileListQuery = recordListQuery.extend({
  'emails[]': z
    .array(z.string().openapi({ format: 'email' }))
    .max(MAX_EMAILS)
    .optional()
    .openapi({ description: 'Only profiles with one of these emails (case-insensitive); repeat the parameter, up to 250 values' }),
});
const languageResponse = languageSchema.extend({ url: uri().nullable() }).openapi('LanguageV2');

/** Every /api/v2 operation, from the catalogue's tables as the router builds its routes. */
export function registerV2Paths(registry: OpenAPIRegistry): void {
  const operation = operationsOf(registry, ['v2'], SECURITY.bearer);
  const language = { language_id: 'The language id (its own `id`)' };
  const put = (path: string, operationId: string, summary: string, description: string, bodySchema: ZodTypeAny, answer: ZodTypeAny) =>
    operation({
      method: 'put',
      path,
      operationId,
      summary,
      description,
      request: {
        ...(path.includes('{language_id}') ? { params: pathParams(language) } : {}),
        body: { required: true, content: json(bodySchema) },
      },
      responses: { 200: { description: 'The saved record, bare (the same shape GET returns)', content: json(answer) } },
      // Language-scoped: the language, or a record the write needs (a purchase event's order), may be missing.
      errors: path.includes('{language_id}')
        ? ['badRequest', 'unauthorized', 'notFound', 'tooLarge', 'bodyTimeout', 'unsupportedMediaType', 'serverError']
        : WRITE_ERRORS.filter((name) => name !== 'languageNotFound'),
    });

  operation({
    method: 'get',
    path: '/api/v2/languages',
    operationId: 'v2ListLanguages',
    summary: "The account's languages",
    description: 'Ordered by creation, then id.',
    request: { query: listQuery },
    responses: {
      200: { description: 'A page of languages, by creation', content: json(page(languageResponse)) },
    },
    errors: ['badRequest', 'unauthorized', 'serverError'],
  });
  put(
    '/api/v2/languages',
    'v2SaveLanguage',
    'Create or update a language',
    'Only `id` is required; `name`, `code`, `active` and `url` are null until set. Omitted fields keep their values, `null` clears them.',
    z.object({ language: languageV2WriteSchema.openapi('LanguageV2Write') }).strict(),
    languageResponse,
  );
  operation({
    method: 'get',
    path: '/api/v2/languages/{language_id}',
    operationId: 'v2GetLanguage',
    summary: 'One language of the account',
    description: "Another account's language is 404, as an unknown one.",
    request: { params: pathParams(language) },
    responses: {
      200: { description: 'The language', content: json(languageResponse) },
    },
    errors: ['unauthorized', 'languageNotFound', 'serverError'],
  });
  operation({
    method: 'delete',
    path: '/api/v2/languages/{language_id}',
    operationId: 'v2DeleteLanguage',
    summary: 'Delete a language and, in the background, every record in it',
    description: 'The same id can be PUT again at once, and starts empty.',
    request: { params: pathParams(language) },
    responses: { 204: NO_CONTENT },
    errors: ['unauthorized', 'languageNotFound', 'serverError'],
  });

  put(
    '/api/v2/custom_attributes',
    'v2SaveCustomAttribute',
    'Create or update a custom attribute definition of the account',
    'The handle is derived from `name` (lower case, runs of other characters than a-z and 0-9 as `_`); a definition is identified by `resource` and handle. Definitions describe attributes and never reject a write.',
    z.object({ custom_attribute: attributeDefinitionWriteSchema.openapi('CustomAttributeDefinitionWrite') }).strict(),
    attributeDefinitionSchema.openapi('CustomAttributeDefinition'),
  );
  operation({
    method: 'get',
    path: '/api/v2/custom_attributes',
    operationId: 'v2ListCustomAttributes',
    summary: "The account's custom attribute definitions",
    description: `Ordered by first creation, then resource, then handle. Datatypes: ${ATTRIBUTE_DATATYPES.join(', ')}.`,
    request: { query: pageQuery.extend({ resource: z.enum(ATTRIBUTE_RESOURCES).optional() }) },
    responses: {
      200: { description: 'A page of definitions', content: json(page(attributeDefinitionSchema)) },
    },
    errors: ['badRequest', 'unauthorized', 'serverError'],
  });

  for (const kind of STORED_KINDS) {
    const { segment, resource, v2 } = KINDS[kind];
    const name = resource.toLowerCase();
    put(
      `/api/v2/languages/{language_id}/${segment}`,
      `v2Save${pascal(kind)}`,
      `Create or update ${withArticle(name)} (merging: omitted fields keep their values, null clears)`,
      [
        'A JSON body of exactly one key, the kind; 200 whether it creates or updates.',
        v2.hint ?? '',
        KINDS[kind].requires ? `The ${KINDS[kind].requires!.kind} must exist (404 otherwise).` : '',
      ]
        .filter(Boolean)
        .join(' '),
      z.object({ [kind]: v2.schema.openapi(`${pascal(kind)}V2Write`) }).strict(),
      recordSchema(kind),
    );
  }

  registerBulkPaths(registry, 'v2');
  registerFeedPaths(registry);
  registerWebhookPaths(registry);
  registerErasurePaths(registry);

  for (const kind of RECORD_KINDS) {
    const { segment, resource } = KINDS[kind];
    operation({
      method: 'delete',
      path: `/api/v2/languages/{language_id}/${segment}/{record_id}`,
      operationId: `v2Delete${pascal(kind)}`,
      summary: `Delete ${withArticle(resource.toLowerCase())} (irreversible; its cascade follows from the queue)`,
      description:
        "Effects on other records: a product's variants are deleted with it and its category and related-product links removed; a category's child categories lose their parent; a brand's products lose their brand; anything else stays.",
      request: { params: pathParams({ ...language, record_id: `The ${resource.toLowerCase()} id` }) },
      responses: { 204: NO_CONTENT },
      errors: ['unauthorized', 'notFound', 'serverError'],
    });
  }

  const subLists = [
    [
      'products/{product_id}/variants',
      'v2ListProductVariants',
      'The variants of a product',
      summaries.variant,
      { product_id: 'The product id' },
      recordListQuery,
    ],
    [
      'products/{product_id}/categories',
      'v2ListProductCategories',
      'The categories a product is assigned to',
      summaries.category,
      { product_id: 'The product id' },
      recordListQuery,
    ],
    [
      'products/{product_id}/relevant_products',
      'v2ListRelevantProducts',
      "The product's related products (whole products)",
      recordSchema('product'),
      { product_id: 'The product id' },
      recordListQuery,
    ],
    [
      'categories/{category_id}/products',
      'v2ListCategoryProducts',
      'The products assigned to a category',
      summaries.product,
      { category_id: 'The category id' },
      recordListQuery,
    ],
    [
      'brands/{brand_id}/products',
      'v2ListBrandProducts',
      'The products whose brand_id is the brand (whole products)',
      recordSchema('product'),
      { brand_id: 'The brand id' },
      recordListQuery,
    ],
    [
      'orders/{parent_id}/products',
      'v2ListOrderLines',
      "The order's lines, in line order",
      lineItemSchemas.order,
      { parent_id: 'The order id' },
      pageQuery,
    ],
    [
      'shopping_carts/{parent_id}/products',
      'v2ListCartProducts',
      "The cart's products, in cart order",
      lineItemSchemas.shopping_cart,
      { parent_id: 'The shopping cart id' },
      pageQuery,
    ],
  ] as const;
  for (const [path, operationId, summary, item, params, query] of subLists) {
    operation({
      method: 'get',
      path: `/api/v2/languages/{language_id}/${path}`,
      operationId,
      summary,
      description: query === pageQuery ? 'Takes `page` and `per_page` only.' : 'Ordered by created_at, then id.',
      request: { params: pathParams({ ...language, ...params }), query },
      responses: {
        200: { description: 'A page', content: json(query === pageQuery ? page(item) : recordPage(item)) },
      },
      errors: LIST_ERRORS,
    });
  }

  for (const [segment, link] of Object.entries(LINK_WRITERS)) {
    const other = KINDS[link.kind].resource.toLowerCase();
    const params = pathParams({ ...language, product_id: 'The product id', other_id: `The ${other} id` });
    for (const [method, verb, summary] of [
      ['put', 'Link', `Link ${withArticle(other)} to the product (no effect when linked; both must exist, no stubs)`],
      ['delete', 'Unlink', `Remove the link only (204 also when there was none)`],
    ] as const) {
      operation({
        method,
        path: `/api/v2/languages/{language_id}/products/{product_id}/${segment}/{other_id}`,
        operationId: `v2${verb}${pascal(segment)}`,
        summary,
        description: `The link (${link.field}) follows from the queue, audited as \`${method === 'put' ? 'link' : 'unlink'}\` of the product.`,
        request: { params },
        responses: {
          204: { description: 'Accepted; the link follows from the queue' },
        },
        errors: ['unauthorized', 'notFound', 'serverError'],
      });
    }
  }

  for (const parent of Object.keys(LINE_LISTS) as LineParent[]) {
    const { segment, resource } = KINDS[parent];
    const params = pathParams({ ...language, parent_id: `The ${resource.toLowerCase()} id`, product_id: 'The product id' });
    const path = `/api/v2/languages/{language_id}/${segment}/{parent_id}/products/{product_id}`;
    operation({
      method: 'put',
      path,
      operationId: `v2Put${pascal(parent)}Line`,
      summary:
        parent === 'order'
          ? "Add the product's line, or update it (sent fields replace, omitted keep; a new line's quantity is 1)"
          : 'Add the product to the cart (no effect when present)',
      description: 'A missing product becomes a stub; the change is audited as an update of the parent.',
      request: {
        params,
        ...(parent === 'order'
          ? {
              body: {
                required: false,
                content: json(
                  z
                    .object({
                      quantity: z.number().int().nullable().optional(),
                      variant_id: z.string().nullable().optional(),
                      custom_attributes: z.array(customAttributeSchema).max(MAX_CUSTOM_ATTRIBUTES).nullable().optional(),
                    })
                    .strict()
                    .openapi('OrderLineWrite'),
                ),
              },
            }
          : {}),
      },
      responses: {
        ...(parent === 'order' ? { 200: { description: 'The line', content: json(lineItemSchemas.order) } } : { 204: NO_CONTENT }),
      },
      errors:
        parent === 'order'
          ? ['badRequest', 'unauthorized', 'notFound', 'tooLarge', 'bodyTimeout', 'unsupportedMediaType', 'serverError']
          : // A product id over 255 characters cannot name a product of the cart (interface §13.2): 400 invalid_parameters.
            ['badRequest', 'unauthorized', 'notFound', 'serverError'],
    });
    operation({
      method: 'delete',
      path,
      operationId: `v2Delete${pascal(parent)}Line`,
      summary: "Remove the product's lines (204 also when there is none)",
      request: { params },
      responses: { 204: NO_CONTENT },
      errors: ['unauthorized', 'notFound', 'serverError'],
    });
  }

  for (const kind of STORED_KINDS) {
    const { segment, resource } = KINDS[kind];
    const record = recordSchema(kind);
    const plural = kind === 'profile' ? 'Profiles, as summaries' : `${resource}s`.replace(/ys$/, 'ies');
    operation({
      method: 'get',
      path: `/api/v2/languages/{language_id}/${segment}`,
      operationId: `v2List${pascal(segment)}`,
      summary: plural,
      description:
        kind === 'global_unsubscribe'
          ? 'Ordered by created_at, then profile_email; a re-subscription stays listed with `unsubscribed: false`.'
          : kind === 'purchase_event'
            ? 'Ordered by created_at, then order_id.'
            : 'Ordered by created_at, then id.',
      request: { params: pathParams(language), query: kind === 'profile' ? profileListQuery : recordListQuery },
      responses: {
        200: { description: 'A page', content: json(recordPage(kind === 'profile' ? summaries.profile : record)) },
      },
      errors: LIST_ERRORS,
    });
    if (kind === 'global_unsubscribe') continue;
    operation({
      method: 'get',
      path: `/api/v2/languages/{language_id}/${segment}/{record_id}`,
      operationId: `v2Get${pascal(kind)}`,
      summary: `One ${resource.toLowerCase()}`,
      description: `404 \`{"error":"${resource} not found"}\` when there is none.`,
      request: {
        params: pathParams({ ...language, record_id: kind === 'purchase_event' ? 'The order id' : `The ${resource.toLowerCase()} id` }),
      },
      responses: {
        200: { description: `The ${resource.toLowerCase()}`, content: json(record) },
      },
      errors: ['unauthorized', 'notFound', 'serverError'],
    });
  }
}
