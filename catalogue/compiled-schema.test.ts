import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Rng, rng as random } from '../test/support/scenario.js';
import { compileSchema } from './compiled-schema.js';
import { encodeCursor } from './list-cursor.js';
import {
  bulkListQuerySchema,
  listQuerySchema,
  pageQuerySchema,
  profileListQuerySchema,
  recordListQuerySchema,
} from './list-query.schema.js';
import { idSchema } from './primitives.schema.js';
import { KINDS, type StoredKind } from './record-kinds.js';
import { parseOrThrow, toValidationError } from './validation.js';

/** Strings that sit on every edge the schemas draw: empty, lengths, NUL, surrogates, date-times, URLs, emails. */
const STRINGS = [
  '',
  'a',
  'p1',
  'x'.repeat(255),
  'x'.repeat(256),
  'a\u0000b',
  '\uD800',
  'ok \uD83D\uDE00',
  '\uDE00x',
  '2024-01-02',
  '2024-01-02T03:04:05Z',
  '2024-01-02 03:04',
  '2024-02-30',
  '2024-01-02T03:04:05.123456+02:00',
  'https://shop.test/p/1',
  'ftp://shop.test',
  'not a url',
  'p@example.test',
  'P@Example.TEST',
  'not an email',
  'pending',
  'red',
];
const NUMBERS = [0, 1, -1, 3, 1.5, -0, 2 ** 53, 2 ** 53 + 2, 1e20, 255, 1e308, Number.POSITIVE_INFINITY, Number.NaN];
const WRONG = [null, true, 'text', 7, 2.5, [], {}, ['a']];

/** The edge values a leaf (a string, number or effect over them) accepts, to draw from most of the time. */
const accepting = new WeakMap<z.ZodTypeAny, unknown[]>();
const LEAVES = new Set(['ZodString', 'ZodNumber', 'ZodEffects', 'ZodPipeline', 'ZodUnion']);
function acceptedEdges(schema: z.ZodTypeAny): unknown[] {
  let values = accepting.get(schema);
  if (!values) {
    values = [...STRINGS, ...NUMBERS].filter((value) => schema.safeParse(value).success);
    accepting.set(schema, values);
  }
  return values;
}

/** A value for `schema`: mostly of its shape, sometimes of another, so that both acceptance and refusal are covered. */
function sample(schema: z.ZodTypeAny, r: Rng, depth = 0): unknown {
  if (r.chance(0.02)) return r.pick(WRONG);
  const def = schema._def;
  if (LEAVES.has(def.typeName) && r.chance(0.85)) {
    const edges = acceptedEdges(schema);
    if (edges.length > 0) return r.pick(edges);
  }
  switch (def.typeName) {
    case 'ZodString':
      return r.pick(STRINGS);
    case 'ZodNumber':
      return r.pick(NUMBERS);
    case 'ZodBoolean':
      return r.chance(0.5);
    case 'ZodEnum':
      return r.chance(0.9) ? r.pick(def.values as string[]) : 'none of them';
    case 'ZodArray': {
      const length = depth > 4 ? 0 : Math.floor(r.next() * 4);
      return Array.from({ length }, () => sample(def.type, r, depth + 1));
    }
    case 'ZodObject': {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(def.shape() as Record<string, z.ZodTypeAny>)) {
        if (r.chance(value.isOptional() ? 0.5 : 0.97)) out[key] = sample(value, r, depth + 1);
      }
      if (r.chance(0.02)) out['unknown_field'] = 'x';
      return out;
    }
    case 'ZodOptional':
      return r.chance(0.2) ? undefined : sample(def.innerType, r, depth);
    case 'ZodNullable':
      return r.chance(0.2) ? null : sample(def.innerType, r, depth);
    case 'ZodUnion':
      return sample(r.pick(def.options as z.ZodTypeAny[]), r, depth);
    case 'ZodEffects':
      return sample(def.schema, r, depth);
    case 'ZodPipeline':
      return sample(def.in, r, depth);
    default:
      return r.pick(WRONG);
  }
}

const SCHEMAS = (Object.keys(KINDS) as StoredKind[]).flatMap((kind) => [
  { name: `${kind} (v1)`, schema: KINDS[kind].schema },
  { name: `${kind} (v2)`, schema: KINDS[kind].v2.schema },
]);

/**
 * Parses `input` with the schema and its compiled form, and expects both to accept or refuse it alike, with the
 * same output (as JSON text, so that key order and absent keys count too). The schema's own result, for more checks.
 */
function expectParsedAlike(schema: z.ZodTypeAny, compiled: ReturnType<typeof compileSchema>, input: unknown) {
  const expected = schema.safeParse(input);
  const actual = compiled.safeParse(input);
  expect({ input, accepted: actual.success }).toEqual({ input, accepted: expected.success });
  if (expected.success && actual.success) expect(JSON.stringify(actual.data)).toBe(JSON.stringify(expected.data));
  return expected;
}

describe('when a body is validated by the compiled form of its schema', () => {
  it.each(SCHEMAS)(
    'should accept exactly what the $name schema accepts, with the same output, and report refusals as it does',
    ({ schema }) => {
      const r = random(11);
      const compiled = compileSchema(schema);
      let accepted = 0;
      const bodies = 1_500;
      for (let index = 0; index < bodies; index += 1) {
        const body = sample(schema, r);
        const expected = expectParsedAlike(schema, compiled, body);
        if (expected.success) {
          accepted += 1;
        } else {
          // A refused body is reported as the schema reports it (interface §4).
          const reported = toValidationError(expected.error, body);
          expect(() => parseOrThrow(schema, body)).toThrow(reported.message);
          try {
            parseOrThrow(schema, body);
          } catch (error) {
            expect(error).toMatchObject({ errorClass: reported.errorClass, parameters: reported.parameters });
          }
        }
      }
      // The generated bodies must reach both sides, or the comparison says little.
      expect(accepted).toBeGreaterThan(bodies * 0.1);
      expect(accepted).toBeLessThan(bodies);
    },
  );

  it('should keep a refinement that failed outside when another one runs inside it', () => {
    // An outer refinement that raises an issue and then parses (running the compiled form's refinements) stays refused.
    const inner = z.string().refine((value) => value !== 'bad');
    const outer = z.string().superRefine((value, context) => {
      if (value === 'refuse me') context.addIssue({ code: z.ZodIssueCode.custom, message: 'no' });
      compileSchema(inner).safeParse('fine');
    });
    expect(compileSchema(outer).safeParse('refuse me').success).toBe(false);
    expect(compileSchema(outer).safeParse('accept me').success).toBe(true);
  });

  it('should give an id sent as a number as its string', () => {
    expect(compileSchema(idSchema).safeParse(42)).toEqual({ success: true, data: '42' });
  });
});

describe('when a list query is validated by the compiled form of its schema', () => {
  const cursor = encodeCursor({ page: 2, after: { created_at: '2024-01-02T03:04:05.000Z', id: 'p1' } });
  const QUERIES: Array<Record<string, unknown>> = [
    {},
    { page: '1' },
    { page: '01', per_page: '250' },
    { page: '0' },
    { page: '1.0' },
    { page: '+1' },
    { page: '' },
    { page: '1e3' },
    { page: '9007199254740991' },
    { page: '9007199254740992' },
    { page: ['1', '2'] },
    { per_page: '1' },
    { per_page: '0' },
    { per_page: '251' },
    { created_after: '2024-01-02T03:04:05Z', updated_before: '2024-01-02T03:04:05.123+02:00' },
    { created_after: '2024-01-02T03:04:05 02:00' },
    { created_before: '2024-01-02' },
    { updated_after: 'not a date' },
    { cursor },
    { cursor, per_page: '5' },
    { cursor, page: '2' },
    { cursor: 'garbage!' },
    { cursor: '' },
    { unknown: 'x' },
    { 'emails[]': 'P@Example.TEST' },
    { 'emails[]': ['a@x.test', 'A@X.test', 'b@x.test'] },
    { 'emails[]': 'not an email' },
    { 'emails[]': Array.from({ length: 251 }, (_, index) => `p${index}@x.test`) },
  ];
  it.each([
    ['record lists', recordListQuerySchema],
    ['profile lists', profileListQuerySchema],
    ['lists without a cursor', listQuerySchema],
    ['lines', pageQuerySchema],
    ['bulk jobs', bulkListQuerySchema],
  ] as const)('should accept exactly the queries of %s that the schema accepts, with the same output', (_, schema) => {
    let accepted = 0;
    const compiled = compileSchema(schema);
    for (const query of QUERIES) if (expectParsedAlike(schema, compiled, query).success) accepted += 1;
    expect(accepted).toBeGreaterThan(3);
    expect(accepted).toBeLessThan(QUERIES.length);
  });
});
