/**
 * A strict reader of Prometheus's text exposition format 0.0.4, written from the format's description
 * (https://prometheus.io/docs/instrumenting/exposition_formats/) and independent of the code that writes
 * it: every line is a `# HELP`, a `# TYPE`, another comment, a sample or empty (the format ignores empty
 * lines; prom-client writes one between families); label values use only the escapes `\\`, `\"` and
 * `\n`; a family's HELP and TYPE come once and before its samples, and its samples are not split by
 * another family; histograms have cumulative buckets ending in `+Inf` equal to `_count`. Any breach
 * throws, naming the line.
 */

export interface ParsedSample {
  /** The sample's own name (`…_bucket`, `…_sum`, `…_count` for a histogram's lines). */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface ParsedFamily {
  name: string;
  type: string;
  help: string;
  samples: ParsedSample[];
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABEL = "[a-zA-Z_][a-zA-Z0-9_]*";
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

export function parseExposition(text: string): Map<string, ParsedFamily> {
  const families = new Map<string, ParsedFamily>();
  const closed = new Set<string>();
  let current: string | undefined;
  if (text.length > 0 && !text.endsWith("\n")) throw new Error("the text does not end with a newline");
  const lines = text.split("\n");
  lines.pop();
  lines.forEach((line, index) => {
    const at = `line ${index + 1} (${JSON.stringify(line)})`;
    const family = (name: string): ParsedFamily => {
      if (closed.has(name)) throw new Error(`${at}: family ${name} continues after another family`);
      if (current !== undefined && current !== name) closed.add(current);
      current = name;
      let f = families.get(name);
      if (f === undefined) {
        f = { name, type: "untyped", help: "", samples: [] };
        families.set(name, f);
      }
      return f;
    };
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME})(?: (.*))?$`).exec(line);
    if (meta !== null) {
      const [, kind, name, rest = ""] = meta;
      const f = family(name!);
      if (kind === "HELP") {
        if (f.help !== "") throw new Error(`${at}: a second HELP for ${name}`);
        if (/\\[^\\n]/.test(rest.replace(/\\\\/g, ""))) throw new Error(`${at}: a bad escape in HELP`);
        f.help = rest.replace(/\\(\\|n)/g, (_, c: string) => (c === "n" ? "\n" : "\\"));
      } else {
        if (!TYPES.has(rest)) throw new Error(`${at}: unknown type ${rest}`);
        if (f.samples.length > 0) throw new Error(`${at}: TYPE after samples of ${name}`);
        if (f.type !== "untyped") throw new Error(`${at}: a second TYPE for ${name}`);
        f.type = rest;
      }
      return;
    }
    if (line.startsWith("#") || line === "") return; // a plain comment, or an empty line
    const sample = parseSample(line, at);
    const base = baseName(sample.name, families);
    family(base).samples.push(sample);
  });
  for (const f of families.values()) checkFamily(f);
  return families;
}

/** A histogram's `x_bucket`, `x_sum` and `x_count` lines belong to family `x` when `x` is a histogram. */
function baseName(name: string, families: Map<string, ParsedFamily>): string {
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (m !== null && families.get(m[1]!)?.type === "histogram") return m[1]!;
  return name;
}

function parseSample(line: string, at: string): ParsedSample {
  const head = new RegExp(`^(${NAME})`).exec(line);
  if (head === null) throw new Error(`${at}: not a sample`);
  const name = head[1]!;
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === "{") {
    i += 1;
    const blanks = () => {
      while (line[i] === " " || line[i] === "\t") i += 1;
    };
    blanks();
    while (line[i] !== "}") {
      const label = new RegExp(`^(${LABEL})="`).exec(line.slice(i));
      if (label === null) throw new Error(`${at}: a bad label at column ${i + 1}`);
      i += label[0].length;
      let value = "";
      for (;;) {
        const c = line[i];
        if (c === undefined) throw new Error(`${at}: an unterminated label value`);
        if (c === '"') break;
        if (c === "\\") {
          const next = line[i + 1];
          if (next === "\\") value += "\\";
          else if (next === '"') value += '"';
          else if (next === "n") value += "\n";
          else throw new Error(`${at}: a bad escape \\${next} in a label value`);
          i += 2;
        } else {
          value += c;
          i += 1;
        }
      }
      i += 1; // the closing quote
      if (label[1]! in labels) throw new Error(`${at}: label ${label[1]} twice`);
      labels[label[1]!] = value;
      blanks(); // Prometheus's parser skips blanks around label pairs
      if (line[i] === ",") {
        i += 1;
        blanks();
      } else if (line[i] !== "}") throw new Error(`${at}: expected , or } at column ${i + 1}`);
    }
    i += 1;
  }
  const rest = /^ (\S+)(?: (-?\d+))?$/.exec(line.slice(i));
  if (rest === null) throw new Error(`${at}: expected ' value [timestamp]'`);
  return { name, labels, value: parseValue(rest[1]!, at) };
}

function parseValue(text: string, at: string): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`${at}: not a number: ${text}`);
  return Number(text);
}

function checkFamily(f: ParsedFamily): void {
  const seen = new Set<string>();
  for (const s of f.samples) {
    const key = `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
    if (seen.has(key)) throw new Error(`${f.name}: the series ${key} appears twice`);
    seen.add(key);
    if (f.type === "counter" && !(s.value >= 0)) throw new Error(`${f.name}: a counter is ${s.value}`);
  }
  if (f.type !== "histogram") {
    for (const s of f.samples)
      if (s.name !== f.name) throw new Error(`${f.name}: a sample named ${s.name} in it`);
    return;
  }
  const series = new Map<string, { buckets: [number, number][]; count?: number; sum?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`${f.name}: a bucket without le`);
      entry.buckets.push([parseValue(le, f.name), s.value]);
    } else if (s.name === `${f.name}_count`) entry.count = s.value;
    else if (s.name === `${f.name}_sum`) entry.sum = s.value;
    else throw new Error(`${f.name}: a sample named ${s.name} in a histogram`);
  }
  for (const [key, entry] of series) {
    const { buckets } = entry;
    if (buckets.at(-1)?.[0] !== Number.POSITIVE_INFINITY)
      throw new Error(`${f.name}${key}: the last bucket is not +Inf`);
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i]![0] > buckets[i - 1]![0])) throw new Error(`${f.name}${key}: le out of order`);
      if (buckets[i]![1] < buckets[i - 1]![1]) throw new Error(`${f.name}${key}: buckets are not cumulative`);
    }
    if (entry.count === undefined || entry.sum === undefined)
      throw new Error(`${f.name}${key}: no _count or _sum`);
    if (entry.count !== buckets.at(-1)![1])
      throw new Error(`${f.name}${key}: +Inf bucket differs from _count`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
export function sampleValue(
  families: Map<string, ParsedFamily>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const matches = [...families.values()]
    .flatMap((f) => f.samples)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (matches.length > 1)
    throw new Error(`${name}${JSON.stringify(labels)} matches ${matches.length} samples`);
  return matches[0]?.value;
}
