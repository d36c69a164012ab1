import type { z } from 'zod';
import { z as z4 } from 'zod/v4';

/*
 * A zod 4 form of a zod 3 schema, derived from it (never written by hand), for
 * the path every accepted body takes. The schemas stay zod 3 (the API
 * description and slonik's row types are built from them), but zod 3 spends
 * most of a parse in its per-node machinery, several times this form's CPU
 * and garbage, and every single write and every bulk line is validated.
 *
 * The compiled form must accept exactly what the schema accepts, with the
 * same output; catalogue/compiled-schema.test.ts checks that on bodies
 * generated from every record kind's schema. Its refinements and transforms
 * are the schema's own functions, called with a context that only notes that
 * an issue was raised. What the compiled form refuses is parsed again by the
 * schema itself, which reports the problems (interface §4): errors keep their
 * exact zod 3 shape, and a refusal costs two parses, which only bad input pays.
 *
 * A node whose zod 4 twin is not known to behave the same (an email check, a
 * catch-all, a type not listed below) is delegated whole to its zod 3 self.
 */

type AnySchema = z.ZodTypeAny;
type Compiled = z4.ZodType;

/**
 * What the compiled form hands to the schema's own refinements and transforms:
 * one context for all, which only notes that an issue was raised. Calls are
 * synchronous; one nested in another (a refinement that parses) keeps the
 * outer call's note (`noting`).
 */
const context = {
  failed: false,
  path: [] as (string | number)[],
  addIssue: () => {
    context.failed = true;
  },
};
const sharedContext = context as unknown as z.RefinementCtx;

/** Runs `call` with the shared context; whether it raised an issue. */
function noting(call: () => unknown): { failed: boolean; out: unknown } {
  const outer = context.failed;
  context.failed = false;
  try {
    const out = call();
    return { failed: context.failed, out };
  } finally {
    context.failed = outer;
  }
}

/** The issue of a refusal. It stops the node's other checks, so no function of the schema is handed a value zod 3 would not hand it. */
const REFUSED = { code: 'custom', message: 'refused', continue: false } as const;

/** The node parsed by zod 3 itself, inside the compiled form. */
function delegated(schema: AnySchema): Compiled {
  return z4.unknown().transform((value, issues) => {
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    issues.addIssue(REFUSED);
    return z4.NEVER;
  });
}

function compileString(def: z.ZodStringDef): Compiled | undefined {
  if (def.coerce) return undefined;
  let out = z4.string();
  for (const check of def.checks) {
    if (check.kind === 'min') out = out.min(check.value);
    else if (check.kind === 'max') out = out.max(check.value);
    else if (check.kind === 'length') out = out.length(check.value);
    else return undefined;
  }
  return out;
}

function compileNumber(def: z.ZodNumberDef): Compiled | undefined {
  if (def.coerce) return undefined;
  // zod 3's number is any number but NaN (zod 4's also refuses ±Infinity, and its int() unsafe integers).
  let out: z4.ZodType<number> = z4.custom<number>((value) => typeof value === 'number' && !Number.isNaN(value));
  for (const check of def.checks) {
    if (check.kind === 'int') out = out.refine(Number.isInteger);
    else if (check.kind === 'finite') out = out.refine(Number.isFinite);
    else if (check.kind === 'min') {
      const { value, inclusive } = check;
      out = out.refine((n) => (inclusive ? n >= value : n > value));
    } else if (check.kind === 'max') {
      const { value, inclusive } = check;
      out = out.refine((n) => (inclusive ? n <= value : n < value));
    } else return undefined;
  }
  return out;
}

function compileArray(def: z.ZodArrayDef): Compiled {
  let out = z4.array(compileNode(def.type));
  if (def.minLength) out = out.min(def.minLength.value);
  if (def.maxLength) out = out.max(def.maxLength.value);
  if (def.exactLength) out = out.length(def.exactLength.value);
  return out;
}

function compileObject(schema: z.AnyZodObject): Compiled | undefined {
  const def = schema._def;
  if (def.catchall._def.typeName !== 'ZodNever') return undefined;
  const shape: Record<string, Compiled> = {};
  for (const [key, value] of Object.entries(def.shape() as Record<string, AnySchema>)) shape[key] = compileNode(value);
  if (def.unknownKeys === 'strict') return z4.strictObject(shape);
  if (def.unknownKeys === 'passthrough') return z4.looseObject(shape);
  return z4.object(shape);
}

function compileEffects(def: z.ZodEffectsDef): Compiled {
  const inner = compileNode(def.schema);
  const effect = def.effect;
  switch (effect.type) {
    case 'refinement':
      return inner.refine((value) => !noting(() => effect.refinement(value, sharedContext)).failed, { abort: true });
    case 'transform':
      return inner.transform((value, issues) => {
        const { failed, out } = noting(() => effect.transform(value, sharedContext));
        if (!failed) return out;
        issues.addIssue(REFUSED);
        return z4.NEVER;
      });
    case 'preprocess':
      return z4.preprocess((value, issues) => {
        const { failed, out } = noting(() => effect.transform(value, sharedContext));
        if (failed) issues.addIssue(REFUSED);
        return out;
      }, inner);
  }
}

function compileNode(schema: AnySchema): Compiled {
  const def = schema._def as { typeName: string } & Record<string, unknown>;
  let out: Compiled | undefined;
  switch (def.typeName) {
    case 'ZodString':
      out = compileString(def as unknown as z.ZodStringDef);
      break;
    case 'ZodNumber':
      out = compileNumber(def as unknown as z.ZodNumberDef);
      break;
    case 'ZodBoolean':
      out = (def as unknown as z.ZodBooleanDef).coerce ? undefined : z4.boolean();
      break;
    case 'ZodEnum':
      out = z4.enum((def as unknown as z.ZodEnumDef).values as [string, ...string[]]);
      break;
    case 'ZodArray':
      out = compileArray(def as unknown as z.ZodArrayDef);
      break;
    case 'ZodObject':
      out = compileObject(schema as z.AnyZodObject);
      break;
    case 'ZodOptional':
      out = compileNode((def as unknown as z.ZodOptionalDef).innerType).optional();
      break;
    case 'ZodNullable':
      out = compileNode((def as unknown as z.ZodNullableDef).innerType).nullable();
      break;
    case 'ZodUnion':
      out = z4.union((def as unknown as z.ZodUnionDef).options.map(compileNode) as unknown as [Compiled, Compiled]);
      break;
    case 'ZodEffects':
      out = compileEffects(def as unknown as z.ZodEffectsDef);
      break;
    case 'ZodPipeline': {
      const pipeline = def as unknown as z.ZodPipelineDef<AnySchema, AnySchema>;
      out = compileNode(pipeline.in).pipe(compileNode(pipeline.out));
      break;
    }
  }
  return out ?? delegated(schema);
}

/** The compiled form of `schema`: built once, by the Validator that holds it (validation.ts). */
export function compileSchema(schema: AnySchema): Compiled {
  return compileNode(schema);
}
