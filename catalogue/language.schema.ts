import { z } from 'zod';
import { idSchema, textSchema, urlSchema } from './primitives.schema.js';
import { Validator } from './validation.js';

export const languageWriteSchema = z
  .object({
    id: idSchema,
    name: textSchema(1, 255),
    code: textSchema(1, 35),
    active: z.boolean().nullable().optional(),
    url: urlSchema.nullable().optional(),
  })
  .strict();

/** v2 (interface §19): only the id is required; name and code are null until set. */
export const languageV2WriteSchema = z
  .object({
    id: textSchema(1, 255),
    name: textSchema(1, 255).nullable().optional(),
    code: textSchema(1, 35).nullable().optional(),
    active: z.boolean().nullable().optional(),
    url: urlSchema.nullable().optional(),
  })
  .strict();

/** A language write of either generation: omitted optional fields keep their values, `null` clears them. */
export type LanguageWrite = z.output<typeof languageV2WriteSchema>;

export const languageSchema = z.object({
  id: z.string(),
  // Null only for a language a v2 client created with its id alone.
  name: z.string().nullable(),
  code: z.string().nullable(),
  active: z.boolean().nullable(),
  url: z.string().nullable(),
});

export type Language = z.infer<typeof languageSchema>;

/** The language write bodies' validators (v1 and v2). */
export const languageWriteValidators = {
  v1: new Validator(languageWriteSchema),
  v2: new Validator(languageV2WriteSchema),
};
