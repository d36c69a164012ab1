import { z } from 'zod';
import { textSchema } from './primitives.schema.js';
import { RECORD_KINDS } from './record-kinds.js';

/** interface §18: what a custom attribute holds (date and datetime match the value fields of interface §8.4). */
export const ATTRIBUTE_DATATYPES = ['string', 'integer', 'float', 'boolean', 'date', 'datetime'] as const;

/** The record kinds a definition can describe. */
export const ATTRIBUTE_RESOURCES = RECORD_KINDS;

export const attributeDefinitionWriteSchema = z
  .object({
    name: textSchema(1, 255),
    description: textSchema(),
    datatype: z.enum(ATTRIBUTE_DATATYPES),
    resource: z.enum(ATTRIBUTE_RESOURCES),
  })
  .strict();

export type AttributeDefinitionWrite = z.output<typeof attributeDefinitionWriteSchema>;

export const attributeDefinitionSchema = z.object({
  handle: z.string(),
  name: z.string(),
  description: z.string(),
  datatype: z.enum(ATTRIBUTE_DATATYPES),
  resource: z.enum(ATTRIBUTE_RESOURCES),
});

export type AttributeDefinition = z.infer<typeof attributeDefinitionSchema>;

/** `name` in lower case, each run of characters other than a-z and 0-9 as one `_`, no `_` at either end. */
export const handleOf = (name: string): string =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');

/** The list query: pagination and an optional resource. */
export const attributeDefinitionQuerySchema = z
  .object({
    resource: z.enum(ATTRIBUTE_RESOURCES).optional(),
  })
  .strict();
