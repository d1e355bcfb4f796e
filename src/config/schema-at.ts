import { z } from "zod";

type Schema = z.core.$ZodType;

interface Def {
  type: string;
  innerType?: Schema;
  in?: Schema;
  out?: Schema;
  shape?: Record<string, Schema>;
  element?: Schema;
  defaultValue?: unknown;
  entries?: Record<string, unknown>;
  values?: unknown[];
  checks?: Array<{ _zod: { def: { check: string; value?: unknown; inclusive?: boolean } } }>;
  format?: string;
}

/** A setting's schema with its wrappers peeled off: what it is, its default and its example. */
export interface SchemaPoint {
  def: Def;
  /** The default, when the setting has one (not the `{}` a section starts from). */
  defaultValue?: unknown;
  /** An example written beside the schema (`.meta({ example })`), as YAML. */
  example?: string;
}

const WRAPPERS = new Set(["optional", "nullable", "default", "prefault", "readonly", "nonoptional", "catch"]);

/**
 * The schema a zod issue's path points at, inside `root`: through objects, arrays and the wrappers
 * (optional, default, a transform's pipe). Undefined when the path leaves what the schema describes.
 */
export function schemaAt(root: Schema, path: readonly PropertyKey[]): SchemaPoint | undefined {
  let point = peel(root);
  for (const part of path) {
    const next = typeof part === "number" ? point.def.element : point.def.shape?.[String(part)];
    if (next === undefined) return undefined;
    point = peel(next);
  }
  return point;
}

function peel(schema: Schema): SchemaPoint {
  let current = schema;
  let defaultValue: unknown;
  let example: string | undefined;
  for (;;) {
    const meta = z.globalRegistry.get(current as z.ZodType) as { example?: unknown } | undefined;
    if (example === undefined && typeof meta?.example === "string") example = meta.example;
    const def = current._zod.def as unknown as Def;
    if (def.type === "default" && defaultValue === undefined) defaultValue = def.defaultValue;
    if (WRAPPERS.has(def.type) && def.innerType !== undefined) current = def.innerType;
    else if (def.type === "pipe" && def.in !== undefined && def.out !== undefined)
      // a transform after the schema (`.transform`) or before it (`z.preprocess`)
      current = (def.out._zod.def as unknown as Def).type === "transform" ? def.in : def.out;
    else return { def, defaultValue, example };
  }
}
