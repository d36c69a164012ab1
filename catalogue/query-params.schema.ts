import { z } from 'zod';

/**
 * A decimal integer in a query string of at most `maxDigits` digits, within
 * bounds ("01" is 1; "1.0", "+1", "1e3", "" are not integers).
 */
export const integerParam = (min: number, max: number, maxDigits: number) =>
  z
    .string()
    .regex(new RegExp(`^\\d{1,${maxDigits}}$`), 'must be an integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** A cursor in a query string: `decode` gives null for anything it did not write; `message` says what it must be. */
export const cursorParam = <T>(decode: (value: string) => T | null, message: string) =>
  z.string().transform((value, ctx) => {
    const cursor = decode(value);
    if (cursor === null) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message });
      return z.NEVER;
    }
    return cursor;
  });
