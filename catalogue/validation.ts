import type { z } from 'zod';
import { ValidationError } from '../platform/errors.js';

/** `['products', 0, 'id']` becomes `products[0].id`, the naming of CONTRACT 4. */
export function formatPath(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out;
}

function valueAt(input: unknown, path: ReadonlyArray<string | number>): unknown {
  let current: unknown = input;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[part];
  }
  return current;
}

/**
 * Parses `input` with `schema` and reports problems in the order of CONTRACT 4:
 * missing required fields first, then unknown fields, then wrong types and
 * formats. `prefix` is prepended to every reported name.
 * @throws {ValidationError} with the first class of problem found.
 */
export function parseOrThrow<S extends z.ZodTypeAny>(schema: S, input: unknown, prefix: ReadonlyArray<string | number> = []): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw toValidationError(result.error, input, prefix);
}

export function toValidationError(error: z.ZodError, input: unknown, prefix: ReadonlyArray<string | number> = []): ValidationError {
  const missing = new Set<string>();
  const unknown = new Set<string>();
  const invalid = new Set<string>();
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) unknown.add(formatPath([...prefix, ...issue.path, key]));
      continue;
    }
    const value = valueAt(input, issue.path);
    const name = formatPath([...prefix, ...issue.path]);
    // A required field sent as null is missing; a null inside a list is just invalid.
    const isField = typeof issue.path[issue.path.length - 1] === 'string';
    if (value === undefined || (value === null && isField)) missing.add(name);
    else if (issue.code === 'custom' && issue.params?.['missing'] === true) missing.add(name);
    else invalid.add(name);
  }
  if (missing.size > 0) return new ValidationError('missing_parameters', [...missing]);
  if (unknown.size > 0) return new ValidationError('unknown_parameters', [...unknown]);
  return new ValidationError('invalid_parameters', [...invalid]);
}
