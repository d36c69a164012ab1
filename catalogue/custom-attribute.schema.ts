import { z } from 'zod';
import { dateTimeSchema, isCalendarDay, textSchema } from './primitives.schema.js';

/** The value fields of a custom attribute (interface §8.4); an attribute has exactly one of them. */
export const CUSTOM_ATTRIBUTE_VALUE_FIELDS = ['string_value', 'integer_value', 'boolean_value', 'date_value', 'datetime_value'] as const;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME_WITH_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ]\d{2}:\d{2}/i;

function calendarDayOf(value: string, pattern: RegExp): boolean {
  const match = pattern.exec(value);
  return match !== null && isCalendarDay(Number(match[1]), Number(match[2]), Number(match[3]));
}

/** `YYYY-MM-DD`, a real day. */
export const dateValueSchema = textSchema(10, 10).refine((value) => calendarDayOf(value, DATE), 'must be a date as YYYY-MM-DD');

/** An ISO 8601 date-time with a time part (a bare date is not a date-time here), shown in UTC like every date-time. */
export const dateTimeValueSchema = textSchema(1, 64)
  .refine((value) => calendarDayOf(value, DATE_TIME_WITH_TIME), 'must be an ISO 8601 date-time')
  .pipe(dateTimeSchema);

const attributeSchema = z
  .object({
    name: textSchema(1, 255),
    string_value: textSchema().nullable().optional(),
    integer_value: z.number().int().safe().nullable().optional(),
    boolean_value: z.boolean().nullable().optional(),
    date_value: dateValueSchema.nullable().optional(),
    datetime_value: dateTimeValueSchema.nullable().optional(),
  })
  .strict()
  .superRefine((attribute, ctx) => {
    const given = CUSTOM_ATTRIBUTE_VALUE_FIELDS.filter((field) => attribute[field] !== undefined && attribute[field] !== null);
    if (given.length !== 1) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `must have exactly one of ${CUSTOM_ATTRIBUTE_VALUE_FIELDS.join(', ')}`,
      });
    }
  })
  .transform((attribute) => {
    // Stored and shown as written: the name and its one value field.
    const out: Record<string, unknown> = { name: attribute.name };
    for (const field of CUSTOM_ATTRIBUTE_VALUE_FIELDS) {
      if (attribute[field] !== undefined && attribute[field] !== null) out[field] = attribute[field];
    }
    return out as CustomAttribute;
  });

export type CustomAttribute = { name: string } & Partial<{
  string_value: string;
  integer_value: number;
  boolean_value: boolean;
  date_value: string;
  datetime_value: string;
}>;

/**
 * `custom_attributes` of v2 products and categories: names unique in the
 * array; a write that sends the array replaces the stored one as a whole.
 */
export const MAX_CUSTOM_ATTRIBUTES = 1_000;

export const customAttributesSchema = z
  .array(attributeSchema)
  .max(MAX_CUSTOM_ATTRIBUTES)
  .superRefine((attributes, ctx) => {
    const seen = new Set<string>();
    attributes.forEach((attribute, index) => {
      if (seen.has(attribute.name)) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: [index, 'name'], message: 'custom attribute names must be unique' });
      }
      seen.add(attribute.name);
    });
  })
  // The refinement hides the array's bound from the document generator: stated again here.
  .openapi({ maxItems: MAX_CUSTOM_ATTRIBUTES });
