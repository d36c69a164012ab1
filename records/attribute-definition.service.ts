import {
  type AttributeDefinition,
  attributeDefinitionQuerySchema,
  attributeDefinitionWriteSchema,
  handleOf,
} from '../catalogue/attribute-definition.schema.js';
import { parseEnvelope } from '../catalogue/envelope.schema.js';
import { listQuerySchema } from '../catalogue/list-query.schema.js';
import { parseOrThrow, Validator } from '../catalogue/validation.js';
import type { Database } from '../platform/db.js';
import { ValidationError } from '../platform/errors.js';
import { pageOfAttributeDefinitions, upsertAttributeDefinition } from './attribute-definition.repository.js';

const attributeDefinitionWrite = new Validator(attributeDefinitionWriteSchema);

/*
 * Custom attribute definitions (interface §18): per account, no language.
 * They describe the custom attributes of a resource and never reject a
 * write, so no write depends on the order in which a shop sets things up.
 */

/**
 * PUT /api/v2/custom_attributes: creates the definition of (resource, handle)
 * or updates its name, description and datatype.
 * @throws {ValidationError} per interface §4; `name` giving an empty handle is invalid.
 */
export async function saveAttributeDefinition(db: Database, accountId: number, body: unknown): Promise<AttributeDefinition> {
  const input = parseEnvelope('custom_attribute', body, attributeDefinitionWrite);
  const handle = handleOf(input.name);
  if (handle === '') {
    throw new ValidationError(
      'invalid_parameters',
      ['name'],
      'Invalid parameters: name (it needs a letter a-z or a digit to make a handle)',
    );
  }
  return upsertAttributeDefinition(db, accountId, handle, input);
}

const definitionListQuerySchema = listQuerySchema.pick({ page: true, per_page: true }).merge(attributeDefinitionQuerySchema).strict();

/** GET /api/v2/custom_attributes: `{"data","meta"}`, optionally of one resource. @throws {ValidationError} */
export async function listAttributeDefinitions(db: Database, accountId: number, rawQuery: Record<string, unknown>) {
  const query = parseOrThrow(definitionListQuerySchema, rawQuery);
  const { total, data } = await pageOfAttributeDefinitions(
    db,
    accountId,
    query.resource,
    (query.page - 1) * query.per_page,
    query.per_page,
  );
  return { data, meta: { current_page: query.page, per_page: query.per_page, total } };
}
