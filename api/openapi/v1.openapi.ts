import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { ZodTypeAny } from 'zod';
import { languageSchema, languageWriteSchema } from '../../catalogue/language.schema.js';
import { dateTimeSchema, idListSchema, idSchema, urlSchema } from '../../catalogue/primitives.schema.js';
import { KINDS, RECORD_KINDS, type RecordKind } from '../../catalogue/record-kinds.js';
import { registerBulkPaths } from './bulk.openapi.js';
import { json, operationsOf, pathParams, SECURITY, WRITE_ERRORS, withArticle } from './components.js';
import { z } from './zod-openapi.js';

const pascal = (kind: string) => kind.replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());

/**
 * How a validated input field reads back in a response: ids become strings
 * (interface §2), date-times UTC strings, and every field is present, null when unset.
 */
export function responseView(schema: ZodTypeAny): ZodTypeAny {
  if (schema === idSchema) return z.string();
  if (schema === idListSchema) return z.array(z.string());
  if (schema === dateTimeSchema) return z.string().openapi({ format: 'date-time' });
  if (schema === urlSchema) return z.string().openapi({ format: 'uri' });
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) return nullable(responseView(schema.unwrap()));
  if (schema instanceof z.ZodArray) return z.array(responseView(schema.element));
  if (schema instanceof z.ZodObject) {
    return z.object(
      Object.fromEntries(Object.entries(schema.shape as Record<string, ZodTypeAny>).map(([name, field]) => [name, responseView(field)])),
    );
  }
  return schema;
}

/**
 * `schema` or null. OpenAPI 3.1 writes a nullable enum as `type: [string, null]`
 * with an `enum` that lacks null, which refuses null: the enum lists null too.
 * (An `anyOf` with null would do, but zod-to-openapi writes its null twice.)
 */
export function nullable(schema: ZodTypeAny): ZodTypeAny {
  if (schema instanceof z.ZodNullable) return schema;
  if (schema instanceof z.ZodEnum) return schema.nullable().openapi({ enum: [...(schema.options as string[]), null] as never });
  if (schema instanceof z.ZodLiteral) return schema.nullable().openapi({ enum: [schema.value, null] as never });
  return schema.nullable();
}

/** The saved record of a v1 response, derived from the kind's write schema (see presentRecord in record.service). */
export function v1RecordResponseSchema(kind: RecordKind) {
  const definition = KINDS[kind];
  const shape = (definition.schema as z.AnyZodObject).shape as Record<string, ZodTypeAny>;
  const fields: Record<string, ZodTypeAny> = { id: z.string() };
  for (const field of definition.dataFields) fields[field] = nullable(responseView(shape[field]!));
  if (kind === 'order') {
    // v1 shows lines as {id, quantity}; a status set through v2 may be any shop status (interface §14.3).
    fields['products'] = z.array(z.object({ id: z.string(), quantity: z.number().int().nullable() })).nullable();
    fields['status'] = z
      .string()
      .nullable()
      .openapi({ description: 'processing, shipped, completed or cancelled when written through v1; v2 may store a shop status' });
  }
  if (definition.timestamps.created) fields['created_at'] = z.string().openapi({ format: 'date-time' });
  if (definition.timestamps.updated) fields['updated_at'] = z.string().openapi({ format: 'date-time' });
  // List fields are shown only when the write sent them.
  for (const list of definition.lists)
    fields[list.field] = z.array(z.string()).optional().openapi({ description: 'Only when the write sent it' });
  return z.object(fields).openapi(`${pascal(kind)}V1`);
}

const envelope = (key: string, schema: ZodTypeAny) => z.object({ [key]: schema }).strict();

const saved = (key: string, record: ZodTypeAny, resource: string, verb: 'saved' | 'deleted') =>
  z.object({ [key]: record, message: z.string().openapi({ example: `${resource} successfully ${verb}` }) });

const languageParams = pathParams({ language_id: 'The language id (its own `id`, not its code)' });

/** Every /api/v1 operation. */
export function registerV1Paths(registry: OpenAPIRegistry): void {
  const operation = operationsOf(registry, ['v1'], SECURITY.bearer);

  // The documented path has the trailing slash (interface §4.1); the service answers both spellings.
  for (const [path, operationId] of [
    ['/api/v1/languages/', 'v1SaveLanguage'],
    ['/api/v1/languages', 'v1SaveLanguageNoSlash'],
  ] as const) {
    operation({
      method: 'post',
      path,
      operationId,
      summary: path.endsWith('/')
        ? 'Create or update a language (createLanguage)'
        : 'Create or update a language (the same without the slash)',
      description:
        'Merges into the live language of that id: `name` and `code` are required on every v1 write; omitted optional fields keep their values.',
      request: { body: { required: true, content: json(envelope('language', languageWriteSchema.openapi('LanguageWrite'))) } },
      responses: {
        200: { description: 'Saved', content: json(saved('language', languageSchema.openapi('Language'), 'Language', 'saved')) },
      },
      errors: ['badRequest', 'unauthorized', 'tooLarge', 'bodyTimeout', 'unsupportedMediaType', 'serverError'],
    });
  }

  operation({
    method: 'delete',
    path: '/api/v1/languages/{language_id}',
    operationId: 'v1DeleteLanguage',
    summary: 'Delete a language and, in the background, every record in it (an unknown id also answers 200)',
    request: { params: languageParams },
    responses: {
      200: {
        description: 'Deleted',
        content: json(saved('language', languageSchema.partial().required({ id: true }), 'Language', 'deleted')),
      },
    },
    errors: ['unauthorized', 'serverError'],
  });

  operation({
    method: 'get',
    path: '/api/v1/languages/{language_id}/profiles',
    operationId: 'v1GetProfile',
    summary: 'Find a profile by id or, failing that, by email (case-insensitive)',
    request: {
      params: languageParams,
      query: z.object({ id: z.string().min(1).max(255).optional(), email: z.string().min(1).max(320).optional() }),
    },
    responses: {
      200: { description: 'The profile', content: json(z.object({ profile: v1RecordResponseSchema('profile') })) },
    },
    errors: ['badRequest', 'unauthorized', 'notFound', 'serverError'],
  });

  registerBulkPaths(registry, 'v1');

  for (const kind of RECORD_KINDS) {
    const { segment, resource, schema } = KINDS[kind];
    const record = v1RecordResponseSchema(kind);
    operation({
      method: 'post',
      path: `/api/v1/languages/{language_id}/${segment}`,
      operationId: `v1Save${pascal(kind)}`,
      summary: `Create or update ${withArticle(resource.toLowerCase())} (merging: omitted fields keep their values)`,
      request: {
        params: languageParams,
        body: { required: true, content: json(envelope(kind, schema.openapi(`${pascal(kind)}V1Write`))) },
      },
      responses: {
        200: {
          description: 'Saved; related stubs, links and cascades follow from the queue',
          content: json(saved(kind, record, resource, 'saved')),
        },
      },
      errors: WRITE_ERRORS,
    });
    operation({
      method: 'delete',
      path: `/api/v1/languages/{language_id}/${segment}/{record_id}`,
      operationId: `v1Delete${pascal(kind)}`,
      summary: `Delete ${withArticle(resource.toLowerCase())}`,
      request: { params: pathParams({ language_id: 'The language id', record_id: `The ${resource.toLowerCase()} id` }) },
      responses: {
        200: { description: 'Deleted', content: json(saved(kind, record, resource, 'deleted')) },
      },
      errors: ['unauthorized', 'notFound', 'serverError'],
    });
  }
}
