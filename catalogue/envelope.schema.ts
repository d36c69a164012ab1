import type { z } from 'zod';
import { BadRequestError, ValidationError } from '../platform/errors.js';
import type { Validator } from './validation.js';

/**
 * Unwraps a v1 write body `{"<key>": {...}}` and validates the record.
 * @throws {ValidationError} missing key, other top-level keys, or an invalid record (interface §4).
 * @throws {BadRequestError} when the body is not a JSON object.
 */
export function parseEnvelope<S extends z.ZodTypeAny>(key: string, body: unknown, validator: Validator<S>): z.output<S> {
  if (body === undefined || body === null || (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)) {
    throw new ValidationError('missing_parameters', [key]);
  }
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new BadRequestError('The request body must be a JSON object');
  }
  const record = (body as Record<string, unknown>)[key];
  const others = Object.keys(body).filter((name) => name !== key);
  if (record === undefined) throw new ValidationError('missing_parameters', [key]);
  if (others.length > 0) throw new ValidationError('unknown_parameters', others);
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    throw new ValidationError('invalid_parameters', [key], `${key} must be a JSON object`);
  }
  return validator.parse(record);
}
