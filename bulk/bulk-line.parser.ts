import { z } from 'zod';
import { idSchema } from '../catalogue/primitives.schema.js';
import {
  isStoredKind,
  KINDS,
  LINE_LISTS,
  LINK_WRITERS,
  type LineParent,
  type LinkWriter,
  RECORD_KINDS,
  type RecordKind,
  STORED_KINDS,
  type StoredKind,
} from '../catalogue/record-kinds.js';
import { v2IdSchema } from '../catalogue/record-schemas.js';
import { Validator } from '../catalogue/validation.js';
import { BadRequestError, ValidationError } from '../platform/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../platform/json-nesting.js';
import type { Generation } from '../records/record.service.js';
import { LINE_HAS_NUL, LINE_NOT_UTF8, LINE_TOO_LONG } from './ndjson-copy.transform.js';

/*
 * What one line of a bulk file asks for, as the single requests of its
 * interface would (docs/decisions.md, "Bulk sync" and "Bulk in v2"):
 *  - v1 files: a v1 write body `{"<kind>":{...}}` or `{"delete":{"kind","id"}}`;
 *  - v2 files: a v2 PUT body `{"<body key>":{...}}` of any stored kind,
 *    `{"delete":{"kind","id"}}`, or a request on a record's sub-resource:
 *    `{"put":"<path>"}` (an order line may add `"body":{...}`) and
 *    `{"delete":"<path>"}`, the path relative to the language as in the v2 URL.
 */

export type BulkLine =
  | { type: 'write'; kind: StoredKind; body: unknown }
  | { type: 'delete'; kind: RecordKind; id: string }
  | { type: 'link'; link: LinkWriter; productId: string; otherId: string; action: 'assign' | 'unassign' }
  | { type: 'line'; parent: LineParent; parentId: string; productId: string; remove: boolean; body?: unknown };

const deleteLines = {
  v1: new Validator(z.object({ kind: z.enum(RECORD_KINDS), id: idSchema }).strict()),
  v2: new Validator(z.object({ kind: z.enum(RECORD_KINDS), id: v2IdSchema }).strict()),
} as const;

/** The body keys a line of each generation may carry. */
const LINE_KINDS: Record<Generation, readonly StoredKind[]> = { v1: RECORD_KINDS, v2: STORED_KINDS };

/** v2 body keys that are not records of a language: their own endpoints write them. */
const NOT_IN_A_LANGUAGE: Record<string, string> = {
  language: 'a language is written with PUT /api/v2/languages',
  custom_attribute: 'attribute definitions belong to the account: PUT /api/v2/custom_attributes',
};

const LINE_PARENTS = Object.keys(LINE_LISTS) as LineParent[];

/** The sub-resource paths a v2 `put` or `delete` line may name, for messages. */
const REQUEST_PATHS = [
  ...Object.keys(LINK_WRITERS).map((segment) => `products/{product_id}/${segment}/{id}`),
  ...LINE_PARENTS.map((parent) => `${KINDS[parent].segment}/{${parent}_id}/products/{product_id}`),
];
const REQUEST_HELP =
  `A put line names one of ${REQUEST_PATHS.join(', ')}; ` +
  `a delete line one of those or a record, e.g. products/{id} (paths relative to the language, segments percent-encoded)`;

const lineShapeError = (generation: Generation, keys: string[]) => {
  const kinds = LINE_KINDS[generation].join(', ');
  const extra =
    generation === 'v2'
      ? `, {"delete":{"kind":...,"id":...}}, {"put":"<path>"} or {"delete":"<path>"}`
      : ' or {"delete":{"kind":...,"id":...}}';
  return new ValidationError(
    keys.length === 0 ? 'missing_parameters' : 'unknown_parameters',
    keys.length === 0 ? ['<kind>'] : keys,
    `Each line must be {"<kind>":{...}} for one of ${kinds}${extra}`,
  );
};

const requestLines = {
  put: new Validator(z.object({ put: z.string(), body: z.unknown().optional() }).strict()),
  delete: new Validator(z.object({ delete: z.string() }).strict()),
} as const;

/**
 * The line's request, as the single-record endpoints of its generation would see it.
 * @throws {AppError} the line's client error (recorded; the file goes on).
 */
export function parseBulkLine(text: string, generation: Generation): BulkLine {
  if (text === LINE_TOO_LONG) throw new BadRequestError('Line is longer than 1 MiB');
  if (text === LINE_HAS_NUL) throw new ValidationError('invalid_parameters', ['<line>'], 'Line contains a NUL character');
  if (text === LINE_NOT_UTF8) throw new BadRequestError('Line is not valid UTF-8');
  // Before JSON.parse, which would hold the worker for about a second over the deepest line that fits in 1 MiB.
  if (nestsDeeperThan(text)) throw new BadRequestError(`Line is nested too deeply: at most ${MAX_JSON_DEPTH} levels of arrays and objects`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new BadRequestError('Malformed JSON on this line');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new BadRequestError('Each line must be a JSON object');
  const line = parsed as Record<string, unknown>;
  const keys = Object.keys(line);
  if (generation === 'v2' && ('put' in line || typeof line['delete'] === 'string')) return parseRequestLine(line);
  if (keys.length === 1 && keys[0] === 'delete') {
    const target = deleteLines[generation].parse(line['delete'], ['delete']);
    return { type: 'delete', kind: target.kind, id: target.id };
  }
  const kind = keys.find((key): key is StoredKind => isStoredKind(key) && LINE_KINDS[generation].includes(key));
  if (kind) return { type: 'write', kind, body: line };
  const elsewhere = generation === 'v2' ? keys.find((key) => key in NOT_IN_A_LANGUAGE) : undefined;
  if (elsewhere) {
    throw new ValidationError(
      'unknown_parameters',
      [elsewhere],
      `A bulk line writes records of the language; ${NOT_IN_A_LANGUAGE[elsewhere]}`,
    );
  }
  throw lineShapeError(generation, keys);
}

/** `{"put":"<path>"}` or `{"delete":"<path>"}`: a v2 request on that path. */
function parseRequestLine(line: Record<string, unknown>): BulkLine {
  const method = 'put' in line ? 'put' : 'delete';
  const request = requestLines[method].parse(line) as { put?: string; delete?: string; body?: unknown };
  const path = (method === 'put' ? request.put : request.delete)!;
  const refuse = () => new ValidationError('invalid_parameters', [method], `No v2 ${method.toUpperCase()} at '${path}'. ${REQUEST_HELP}`);
  let segments: string[];
  try {
    segments = path.replace(/^\//, '').split('/').map(decodeURIComponent);
  } catch {
    throw refuse();
  }
  if (segments.some((segment) => segment === '')) throw refuse();
  const [first, firstId, sub, subId] = segments;
  if (segments.length === 2 && method === 'delete') {
    const kind = RECORD_KINDS.find((each) => KINDS[each].segment === first);
    if (kind) return { type: 'delete', kind, id: firstId! };
  }
  if (segments.length === 4) {
    if (first === 'products' && Object.hasOwn(LINK_WRITERS, sub!)) {
      const link = LINK_WRITERS[sub as keyof typeof LINK_WRITERS];
      return { type: 'link', link, productId: firstId!, otherId: subId!, action: method === 'put' ? 'assign' : 'unassign' };
    }
    const parent = LINE_PARENTS.find((each) => KINDS[each].segment === first);
    if (parent && sub === 'products') {
      return {
        type: 'line',
        parent,
        parentId: firstId!,
        productId: subId!,
        remove: method === 'delete',
        ...(request.body !== undefined ? { body: request.body } : {}),
      };
    }
  }
  throw refuse();
}
