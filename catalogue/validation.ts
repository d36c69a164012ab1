import type { z } from 'zod';
import { ValidationError } from '../platform/errors.js';
import { compileSchema } from './compiled-schema.js';

/** `['products', 0, 'id']` becomes `products[0].id`, the naming of interface §4.3. */
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
 * Parses `input` with `schema` and reports problems in the order of interface §4.3:
 * missing required fields first, then unknown fields, then wrong types and
 * formats. `prefix` is prepended to every reported name.
 * @throws {ValidationError} with the first class of problem found.
 */
export function parseOrThrow<S extends z.ZodTypeAny>(schema: S, input: unknown, prefix: ReadonlyArray<string | number> = []): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw toValidationError(result.error, input, prefix);
}

/**
 * A schema with its compiled form (compiled-schema.ts), for bodies every
 * write and bulk line sends: accepted input takes the compiled form; what it
 * refuses, the schema parses again to name the problems (parseOrThrow).
 * Built once, where the schema is defined.
 */
export class Validator<S extends z.ZodTypeAny> {
  private readonly compiled: ReturnType<typeof compileSchema>;

  constructor(readonly schema: S) {
    this.compiled = compileSchema(schema);
  }

  /** @throws {ValidationError} as parseOrThrow. */
  parse(input: unknown, prefix: ReadonlyArray<string | number> = []): z.output<S> {
    const accepted = this.compiled.safeParse(input);
    if (accepted.success) return accepted.data as z.output<S>;
    return parseOrThrow(this.schema, input, prefix);
  }
}

export function toValidationError(error: z.ZodError, input: unknown, prefix: ReadonlyArray<string | number> = []): ValidationError {
  const missing = new Set<string>();
  const unknown = new Set<string>();
  const invalid = new Map<string, Set<string>>();
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
    else invalid.set(name, (invalid.get(name) ?? new Set()).add(expectation(issue, value)));
  }
  if (missing.size > 0) return new ValidationError('missing_parameters', [...missing]);
  if (unknown.size > 0) return new ValidationError('unknown_parameters', [...unknown]);
  const names = [...invalid.keys()];
  const described = [...invalid].map(([name, expected]) => `${name} (${[...expected].join('; ')})`);
  return new ValidationError('invalid_parameters', names, `Invalid parameters: ${described.join(', ')}`);
}

const article = (noun: string) => (/^[aeiou]/i.test(noun) ? `an ${noun}` : `a ${noun}`);

/** What a value is, in the words of the expectations: "a string", "a float", "null". */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number with decimals';
  if (typeof value === 'object') return 'an object';
  return article(typeof value);
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  date: 'a date',
  bigint: 'an integer',
};

const STRING_FORMATS: Record<string, string> = {
  email: 'an email address',
  url: 'a URL',
  uuid: 'a UUID',
  datetime: 'an ISO 8601 date-time',
  date: 'a date (YYYY-MM-DD)',
};

const plural = (count: number | bigint, noun: string) => `${count} ${noun}${Number(count) === 1 ? '' : 's'}`;

function bound(issue: z.ZodIssue & { code: 'too_small' | 'too_big' }): string {
  const small = issue.code === 'too_small';
  const limit = small ? issue.minimum : issue.maximum;
  const inclusive = issue.inclusive;
  const edge = small ? (inclusive ? 'at least' : 'more than') : inclusive ? 'at most' : 'less than';
  switch (issue.type) {
    case 'string':
      return `${edge} ${plural(limit, 'character')}`;
    case 'array':
    case 'set':
      return `${edge} ${plural(limit, 'item')}`;
    case 'date':
      return `${small ? 'not before' : 'not after'} ${new Date(Number(limit)).toISOString()}`;
    default:
      if (Math.abs(Number(limit)) >= Number.MAX_SAFE_INTEGER) return 'a safe integer (below 2^53)';
      return `a number ${edge} ${limit}`;
  }
}

/**
 * What the field should have been, for the message of an invalid_parameters
 * error (interface §4.3 names the fields; this says what each one expected):
 * "expected a number, got a string", "expected one of processing, shipped".
 */
export function expectation(issue: z.ZodIssue, value: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.expected === 'integer') return `expected an integer, got ${kindOf(value)}`;
      return `expected ${TYPE_NAMES[issue.expected] ?? issue.expected}, got ${kindOf(value)}`;
    case 'invalid_literal':
      return `expected ${JSON.stringify(issue.expected)}`;
    case 'invalid_enum_value':
      return `expected one of ${issue.options.map(String).join(', ')}`;
    case 'invalid_union': {
      const branches = issue.unionErrors.map((branch) => {
        const first = branch.issues[0];
        return first ? expectation(first, value).replace(/, got .*$/, '') : 'another value';
      });
      return `${[...new Set(branches)].join(' or ')}, got ${kindOf(value)}`;
    }
    case 'invalid_string': {
      const validation = issue.validation;
      if (typeof validation === 'string' && validation in STRING_FORMATS) return `expected ${STRING_FORMATS[validation]}`;
      if (validation === 'regex')
        return issue.message && issue.message !== 'Invalid' ? asExpectation(issue.message) : 'expected another format';
      if (typeof validation === 'object' && 'startsWith' in validation) return `expected text starting with ${validation.startsWith}`;
      if (typeof validation === 'object' && 'endsWith' in validation) return `expected text ending with ${validation.endsWith}`;
      return 'expected another format';
    }
    case 'too_small':
    case 'too_big':
      return `expected ${bound(issue)}`;
    case 'not_multiple_of':
      return `expected a multiple of ${issue.multipleOf}`;
    case 'not_finite':
      return 'expected a finite number';
    case 'invalid_date':
      return 'expected a valid date';
    case 'custom':
      // Our refinements say what they need ("must be an http or https URL"); zod's bare default says nothing.
      return issue.message && issue.message !== 'Invalid input' ? asExpectation(issue.message) : 'expected another value';
    default:
      return asExpectation(issue.message);
  }
}

/** "must be an integer" reads as "expected an integer", like the rest of the message. */
const asExpectation = (message: string) => message.replace(/^must be /, 'expected ');
