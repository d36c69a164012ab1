import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import {
  type AttributeDefinition,
  type AttributeDefinitionWrite,
  attributeDefinitionSchema,
} from '../catalogue/attribute-definition.schema.js';

/** Creates the definition of (account, resource, handle) or updates its name, description and datatype. */
export async function upsertAttributeDefinition(
  db: CommonQueryMethods,
  accountId: number,
  handle: string,
  input: AttributeDefinitionWrite,
): Promise<AttributeDefinition> {
  return db.one(sql.type(attributeDefinitionSchema)`
    INSERT INTO custom_attribute_definitions AS d (account_id, resource, handle, name, description, datatype, created_at, updated_at)
    VALUES (
      ${accountId}, ${input.resource}, ${handle}, ${input.name}, ${input.description}, ${input.datatype},
      date_trunc('milliseconds', now()), date_trunc('milliseconds', now())
    )
    ON CONFLICT (account_id, resource, handle) DO UPDATE SET
      name = excluded.name,
      description = excluded.description,
      datatype = excluded.datatype,
      updated_at = excluded.updated_at
    RETURNING handle, name, description, datatype, resource
  `);
}

/** A page of the account's definitions, by first creation, then resource, then handle; and how many there are. */
export async function pageOfAttributeDefinitions(
  db: CommonQueryMethods,
  accountId: number,
  resource: string | undefined,
  offset: number,
  limit: number,
): Promise<{ total: number; data: readonly AttributeDefinition[] }> {
  const filter = resource === undefined ? sql.fragment`TRUE` : sql.fragment`resource = ${resource}`;
  return db.transaction(async (tx) => {
    // One snapshot for the total and the page.
    await tx.query(sql.unsafe`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`);
    const total = await tx.oneFirst(sql.type(z.object({ total: z.number() }))`
      SELECT count(*) AS total FROM custom_attribute_definitions WHERE account_id = ${accountId} AND ${filter}
    `);
    const data = await tx.any(sql.type(attributeDefinitionSchema)`
      SELECT handle, name, description, datatype, resource
      FROM custom_attribute_definitions
      WHERE account_id = ${accountId} AND ${filter}
      ORDER BY created_seq, resource, handle
      OFFSET ${offset} LIMIT ${limit}
    `);
    return { total, data };
  });
}
