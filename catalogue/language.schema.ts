import { z } from 'zod';
import { idSchema, textSchema, urlSchema } from './primitives.schema.js';

export const languageWriteSchema = z
  .object({
    id: idSchema,
    name: textSchema(1, 255),
    code: textSchema(1, 35),
    active: z.boolean().nullable().optional(),
    url: urlSchema.nullable().optional(),
  })
  .strict();

export type LanguageWrite = z.output<typeof languageWriteSchema>;

export const languageSchema = z.object({
  id: z.string(),
  name: z.string(),
  code: z.string(),
  active: z.boolean().nullable(),
  url: z.string().nullable(),
});

export type Language = z.infer<typeof languageSchema>;
