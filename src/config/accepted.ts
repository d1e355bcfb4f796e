import { type SchemaPoint, schemaAt } from "./schema-at.ts";

/** What a setting accepts, in words ("a whole number from 1 to 100"), and an example value as YAML. */
export function accepted(point: SchemaPoint | undefined): { words: string; example: string | undefined } {
  const def = point?.def;
  const example =
    point?.example ?? (point?.defaultValue === undefined ? undefined : yaml(point.defaultValue));
  switch (def?.type) {
    case "boolean":
      return { words: "true or false", example: example ?? "true" };
    case "number":
      return numberWords(point as SchemaPoint, example);
    case "string":
      return { words: "text", example };
    case "enum": {
      const options = Object.values(def.entries ?? {}).map(String);
      return { words: `one of ${options.join(", ")}`, example: example ?? options[0] };
    }
    case "literal": {
      const values = (def.values ?? []).map(String);
      return { words: values.join(" or "), example: example ?? values[0] };
    }
    case "array":
      return { words: "a list", example: example === "[]" ? undefined : example };
    case "object": {
      const shape = Object.entries(def.shape ?? {});
      // a section without an example of its own: its first setting that has one
      const first = shape
        .map(([key, child]) => [key, accepted(schemaAt(child, [])).example] as const)
        .find(([, value]) => value !== undefined);
      const words = `a mapping of settings (${shape.map(([key]) => key).join(", ")})`;
      return {
        words,
        example: example ?? (first === undefined ? undefined : `{ ${first[0]}: ${first[1]} }`),
      };
    }
    default:
      return { words: "a valid value", example };
  }
}

function numberWords(
  point: SchemaPoint,
  example: string | undefined,
): { words: string; example: string | undefined } {
  let kind = "a number";
  let low: { value: number; inclusive: boolean } | undefined;
  let high: { value: number; inclusive: boolean } | undefined;
  for (const check of point.def.checks ?? []) {
    const { check: name, value, inclusive = true } = check._zod.def;
    if (name === "number_format") kind = "a whole number";
    if (name === "greater_than" && typeof value === "number") low = { value, inclusive };
    if (name === "less_than" && typeof value === "number") high = { value, inclusive };
  }
  const words =
    low?.inclusive && high?.inclusive
      ? `${kind} from ${low.value} to ${high.value}`
      : [
          kind,
          low === undefined ? "" : low.inclusive ? `of at least ${low.value}` : `above ${low.value}`,
          high === undefined
            ? ""
            : `${low === undefined ? "" : "and "}${high.inclusive ? "at most" : "below"} ${high.value}`,
        ]
          .filter((part) => part !== "")
          .join(" ");
  const fallback = low === undefined ? undefined : String(low.inclusive ? low.value : low.value + 1);
  return { words, example: example ?? fallback };
}

function yaml(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((v) => (typeof v === "string" && /^[\w.-]+$/.test(v) ? v : JSON.stringify(v))).join(", ")}]`;
  if (typeof value === "string") return /^[\w./@:-]+$/.test(value) ? value : JSON.stringify(value);
  return String(value);
}
