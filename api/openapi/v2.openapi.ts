import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { ZodTypeAny } from 'zod';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE } from '../../catalogue/list-query.schema.js';
import { KINDS, RECORD_KINDS, type RecordKind } from '../../catalogue/record-kinds.js';
import { errors, json, pathParams, SECURITY, WRITE_ERRORS } from './components.js';
import { v1RecordResponseSchema } from './v1.openapi.js';
import { z } from './zod-openapi.js';

/*
 * /api/v2 in the API description: PUT bodies from the v2 schemas that
 * validate them (record-kinds.ts), responses in the shapes of read.service.ts.
 */

const pascal = (kind: string) => kind.replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());
const dateTime = () => z.string().openapi({ format: 'date-time' });
const ids = (description: string) => z.array(z.string()).openapi({ description });

const customAttributeSchema = z
  .object({
    name: z.string(),
    string_value: z.string().optional(),
    integer_value: z.number().int().optional(),
    boolean_value: z.boolean().optional(),
    date_value: z.string().optional().openapi({ description: 'YYYY-MM-DD' }),
    datetime_value: z.string().optional().openapi({ format: 'date-time', description: 'ISO 8601, shown in UTC' }),
  })
  .openapi('CustomAttribute', { description: '`name` and exactly one value field; names are unique within a record' });

const productSchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    visible: z.boolean().nullable(),
    main_image: z.string().nullable(),
    url: z.string().nullable(),
    short_description: z.string().nullable(),
    price: z.number().nullable(),
    brand_id: z.string().nullable(),
    category_ids: ids('Current category assignments'),
    relevant_product_ids: ids('Current related products'),
    custom_attributes: z.array(customAttributeSchema),
    created_at: dateTime(),
    updated_at: dateTime(),
  })
  .openapi('ProductV2');

const categorySchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    parent_category_id: z.string().nullable(),
    product_ids: ids('Products currently assigned'),
    url: z.string().nullable(),
    visible: z.boolean().nullable(),
    created_at: dateTime(),
    updated_at: dateTime(),
    custom_attributes: z.array(customAttributeSchema),
  })
  .openapi('CategoryV2');

const brandSchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    url: z.string().nullable(),
    content: z.string().nullable(),
    product_ids: ids('Live products whose brand_id is this brand'),
    created_at: dateTime(),
    updated_at: dateTime(),
  })
  .openapi('BrandV2');

/** The full record of each kind as v2 reads show it. */
export function recordSchema(kind: RecordKind): ZodTypeAny {
  if (kind === 'product') return productSchema;
  if (kind === 'category') return categorySchema;
  if (kind === 'brand') return brandSchema;
  // The other kinds have no link lists: v2 shows their v1 records.
  return v1RecordResponseSchema(kind);
}

export const summaries = {
  variant: z
    .object({ id: z.string(), name: z.string().nullable(), price: z.number().nullable(), main_image: z.string().nullable() })
    .openapi('VariantSummary', { description: '`name` is the title, `price` the price_incl' }),
  category: z.object({ id: z.string() }).openapi('CategorySummary'),
  product: z.object({ id: z.string(), name: z.string().nullable(), url: z.string().nullable() }).openapi('ProductSummary'),
  profile: z
    .object({ id: z.string(), email: z.string().nullable(), first_name: z.string().nullable(), last_name: z.string().nullable() })
    .openapi('ProfileSummary'),
};

const metaSchema = z.object({ current_page: z.number().int(), per_page: z.number().int(), total: z.number().int() }).openapi('PageMeta');

export const page = (item: ZodTypeAny) => z.object({ data: z.array(item), meta: metaSchema });

const timestampFilter = (description: string) => z.string().optional().openapi({ format: 'date-time', description });
const listQuery = z.object({
  page: z.number().int().min(1).optional().openapi({ description: 'Page number, 1-based; a page past the end is empty', default: 1 }),
  per_page: z.number().int().min(1).max(MAX_PER_PAGE).optional().openapi({ default: DEFAULT_PER_PAGE }),
  created_after: timestampFilter('Only records created strictly after this instant'),
  created_before: timestampFilter('Only records created strictly before this instant'),
  updated_after: timestampFilter('Only records updated strictly after this instant'),
  updated_before: timestampFilter('Only records updated strictly before this instant'),
});

const LIST_ERRORS = errors('badRequest', 'unauthorized', 'notFound', 'serverError');

/** Every /api/v2 operation. */
export function registerV2Paths(registry: OpenAPIRegistry): void {
  const tags = ['v2'];
  const security = SECURITY.bearer;
  const language = { language_id: 'The language id (its own `id`)' };

  registry.registerPath({
    method: 'get',
    path: '/api/v2/languages',
    operationId: 'v2ListLanguages',
    summary: "The account's languages",
    tags,
    security,
    request: { query: listQuery },
    responses: {
      200: {
        description: 'A page of languages, by creation',
        content: json(
          page(
            z.object({ id: z.string(), name: z.string(), code: z.string(), active: z.boolean().nullable(), url: z.string().nullable() }),
          ),
        ),
      },
      ...errors('badRequest', 'unauthorized', 'serverError'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v2/languages/{language_id}',
    operationId: 'v2GetLanguage',
    summary: 'One language of the account',
    tags,
    security,
    request: { params: pathParams(language) },
    responses: {
      200: {
        description: 'The language',
        content: json(
          z.object({ id: z.string(), name: z.string(), code: z.string(), active: z.boolean().nullable(), url: z.string().nullable() }),
        ),
      },
      ...errors('unauthorized', 'languageNotFound', 'serverError'),
    },
  });

  for (const kind of ['product', 'category'] as const) {
    const { segment, resource, v2 } = KINDS[kind];
    registry.registerPath({
      method: 'put',
      path: `/api/v2/languages/{language_id}/${segment}`,
      operationId: `v2Save${pascal(kind)}`,
      summary: `Create or update a ${resource.toLowerCase()} (merging: omitted fields keep their values)`,
      description: v2!.hint,
      tags,
      security,
      request: {
        params: pathParams(language),
        body: { required: true, content: json(z.object({ [kind]: v2!.schema.openapi(`${pascal(kind)}V2Write`) }).strict()) },
      },
      responses: {
        200: { description: 'The saved record, bare; stubs and links follow from the queue', content: json(recordSchema(kind)) },
        ...errors(...WRITE_ERRORS),
      },
    });
    registry.registerPath({
      method: 'delete',
      path: `/api/v2/languages/{language_id}/${segment}/{record_id}`,
      operationId: `v2Delete${pascal(kind)}`,
      summary: `Delete a ${resource.toLowerCase()} (irreversible; its cascade follows from the queue)`,
      tags,
      security,
      request: { params: pathParams({ ...language, record_id: `The ${resource.toLowerCase()} id` }) },
      responses: { 204: { description: 'Deleted' }, ...errors('unauthorized', 'notFound', 'serverError') },
    });
  }

  const subLists = [
    [
      'products/{product_id}/variants',
      'v2ListProductVariants',
      'The variants of a product',
      summaries.variant,
      { product_id: 'The product id' },
    ],
    [
      'products/{product_id}/categories',
      'v2ListProductCategories',
      'The categories a product is assigned to',
      summaries.category,
      { product_id: 'The product id' },
    ],
    [
      'categories/{category_id}/products',
      'v2ListCategoryProducts',
      'The products assigned to a category',
      summaries.product,
      { category_id: 'The category id' },
    ],
  ] as const;
  for (const [path, operationId, summary, item, params] of subLists) {
    registry.registerPath({
      method: 'get',
      path: `/api/v2/languages/{language_id}/${path}`,
      operationId,
      summary,
      tags,
      security,
      request: { params: pathParams({ ...language, ...params }), query: listQuery },
      responses: { 200: { description: 'A page, by created_at then id', content: json(page(item)) }, ...LIST_ERRORS },
    });
  }

  for (const [method, operationId, summary] of [
    ['put', 'v2AssignProductToCategory', 'Assign a product to a category (no effect when already assigned)'],
    ['delete', 'v2UnassignProductFromCategory', 'Remove the assignment only (204 also when there was none)'],
  ] as const) {
    registry.registerPath({
      method,
      path: '/api/v2/languages/{language_id}/products/{product_id}/categories/{category_id}',
      operationId,
      summary,
      tags,
      security,
      request: { params: pathParams({ ...language, product_id: 'The product id', category_id: 'The category id' }) },
      responses: {
        204: { description: 'Accepted; the link follows from the queue' },
        ...errors('unauthorized', 'notFound', 'serverError'),
      },
    });
  }

  for (const kind of RECORD_KINDS) {
    const { segment, resource } = KINDS[kind];
    const record = recordSchema(kind);
    registry.registerPath({
      method: 'get',
      path: `/api/v2/languages/{language_id}/${segment}`,
      operationId: `v2List${pascal(segment)}`,
      summary: kind === 'profile' ? 'Profiles, as summaries' : `${resource}s`.replace(/ys$/, 'ies'),
      tags,
      security,
      request: { params: pathParams(language), query: listQuery },
      responses: {
        200: { description: 'A page, by created_at then id', content: json(page(kind === 'profile' ? summaries.profile : record)) },
        ...LIST_ERRORS,
      },
    });
    registry.registerPath({
      method: 'get',
      path: `/api/v2/languages/{language_id}/${segment}/{record_id}`,
      operationId: `v2Get${pascal(kind)}`,
      summary: `One ${resource.toLowerCase()}`,
      tags,
      security,
      request: { params: pathParams({ ...language, record_id: `The ${resource.toLowerCase()} id` }) },
      responses: {
        200: { description: `The ${resource.toLowerCase()}`, content: json(record) },
        ...errors('unauthorized', 'notFound', 'serverError'),
      },
    });
  }
}
