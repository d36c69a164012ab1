import type { ListFilters } from '../catalogue/list-query.schema.js';
import type { ItemShape } from './item-shape.js';
import type { ListRequest } from './list-request.js';
import { listStatement } from './list-statement.js';

/*
 * The list statement is built once per structure (kind, scope and position
 * types, which filters, the parent's kind, the item shape), not per page:
 * building it from a hundred slonik fragments is a noticeable part of the
 * API's CPU per page. It is built with a marker in place of every value that varies
 * between requests of one structure; each marker's place in the values then
 * says where that request's value goes. Every other value is a constant of
 * the structure. list-statement.test.ts checks the cached statement against
 * a fresh one for each structure.
 */

interface CachedStatement {
  /** The text as Postgres takes it ($1, $2, ...). */
  text: string;
  /** Each value: a constant, or the slot of a request's variable. */
  values: Array<{ slot: number } | { constant: unknown }>;
}

/** Structures are few (kind × scope × position × filters); the last this many are kept. */
const MAX_STATEMENTS = 1_000;

const FILTER_KEYS = ['created_after', 'created_before', 'updated_after', 'updated_before'] as const;
const MARK = '\u0000slot:';
/** Numeric markers: below any value a list statement holds. */
const NUMBER_MARK = -1_000_000_000;

/** The list statements built so far, per structure: one per API process, built at start-up (read-caches.ts). */
export class ListStatementCache {
  /** Shapes are module constants (v2-shapes.ts); each gets a number for the structure's key. */
  private readonly shapeIds = new WeakMap<ItemShape, number>();
  private nextShapeId = 0;
  private readonly statements = new Map<string, CachedStatement>();

  /** listStatement's text (as Postgres takes it) and values, from the statement cached for the request's structure. */
  bound(langKey: number, request: ListRequest): { text: string; values: unknown[] } {
    const statement = this.cached(request);
    const variables = variablesOf(langKey, request);
    return { text: statement.text, values: statement.values.map((value) => ('slot' in value ? variables[value.slot] : value.constant)) };
  }

  /** listStatement for the request's structure, with the places of its variables. */
  private cached(request: ListRequest): CachedStatement {
    const structure = this.structureOf(request);
    let statement = this.statements.get(structure);
    if (!statement) {
      statement = compile(request);
      if (this.statements.size >= MAX_STATEMENTS) this.statements.clear();
      this.statements.set(structure, statement);
    }
    return statement;
  }

  private structureOf(request: ListRequest): string {
    let shape = this.shapeIds.get(request.shape);
    if (shape === undefined) {
      shape = this.nextShapeId;
      this.shapeIds.set(request.shape, shape);
      this.nextShapeId += 1;
    }
    const { scope } = request;
    return [
      request.kind,
      scope.type,
      scope.type === 'linked' ? `${scope.rel}:${scope.side}` : '',
      FILTER_KEYS.map((key) => (request.filters[key] === undefined ? 0 : 1)).join(''),
      request.position?.type ?? 'page',
      request.parent?.kind ?? '',
      shape,
    ].join('|');
  }
}

/** listStatement built for the request's structure, with a marker in place of each variable. */
function compile(request: ListRequest): CachedStatement {
  const marked = markedRequest(request);
  const built = listStatement(marked.langKey, marked.request);
  return {
    // slonik numbers its placeholders $slonik_1, $slonik_2, ... ; Postgres wants $1, $2, ...
    text: built.sql.replace(/\$slonik_(\d+)/g, '$$$1'),
    values: built.values.map((value) => {
      const slot = slotOf(value);
      return slot === undefined ? { constant: value } : { slot };
    }),
  };
}

/** The values of a request that vary between requests of one statement structure, by slot. */
function variablesOf(langKey: number, request: ListRequest): unknown[] {
  const { scope, filters } = request;
  const position = request.position ?? { type: 'page' };
  return [
    langKey,
    request.page,
    request.perPage,
    position.type === 'anchor' ? position.anchor.offset : undefined,
    position.type === 'anchor' ? position.snapshot : undefined,
    position.type === 'anchor' ? position.anchor.key.created_at : undefined,
    position.type === 'anchor' ? position.anchor.key.id : undefined,
    position.type === 'after' ? position.key.created_at : undefined,
    position.type === 'after' ? position.key.id : undefined,
    scope.type === 'variants-of'
      ? scope.productId
      : scope.type === 'brand-products'
        ? scope.brandId
        : scope.type === 'linked'
          ? scope.other
          : undefined,
    scope.type === 'emails' ? scope.emails : undefined,
    request.parent?.id,
    ...FILTER_KEYS.map((key) => filters[key]),
  ];
}

/** The request with a marker for each of its variables (variablesOf's slots). */
function markedRequest(request: ListRequest): { langKey: number; request: ListRequest } {
  const text = (slot: number) => `${MARK}${slot}`;
  const number = (slot: number) => NUMBER_MARK - slot;
  const { scope } = request;
  const position = request.position ?? { type: 'page' };
  const filters: ListFilters = {};
  FILTER_KEYS.forEach((key, index) => {
    if (request.filters[key] !== undefined) filters[key] = text(12 + index);
  });
  return {
    langKey: number(0),
    request: {
      kind: request.kind,
      scope:
        scope.type === 'variants-of'
          ? { ...scope, productId: text(9) }
          : scope.type === 'brand-products'
            ? { ...scope, brandId: text(9) }
            : scope.type === 'linked'
              ? { ...scope, other: text(9) }
              : scope.type === 'emails'
                ? { ...scope, emails: [text(10)] }
                : scope,
      filters,
      page: number(1),
      perPage: number(2),
      shape: request.shape,
      position:
        position.type === 'anchor'
          ? { type: 'anchor', anchor: { offset: number(3), key: { created_at: text(5), id: text(6) } }, snapshot: text(4) }
          : position.type === 'after'
            ? { type: 'after', key: { created_at: text(7), id: text(8) } }
            : position,
      ...(request.parent ? { parent: { kind: request.parent.kind, id: text(11) } } : {}),
    },
  };
}

/** The slot of a marker value, or undefined for a constant. */
function slotOf(value: unknown): number | undefined {
  if (typeof value === 'number' && value <= NUMBER_MARK) return NUMBER_MARK - value;
  if (typeof value === 'string' && value.startsWith(MARK)) return Number(value.slice(MARK.length));
  if (Array.isArray(value) && typeof value[0] === 'string' && value[0].startsWith(MARK)) return slotOf(value[0]);
  return undefined;
}
