import { z } from 'zod';
import { idSchema, urlSchema } from './primitives.js';

export const languageWriteSchema = z
  .object({
    id: idSchema,
    name: z.string().min(1).max(255),
    code: z.string().min(1).max(35),
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
