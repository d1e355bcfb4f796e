/**
 * Python 3.12 argparse as the simulated `python -m sglang.launch_server` uses it (allow_abbrev=True):
 * unique-prefix abbreviations such as `--tp`, `--flag=value`, the `unrecognized arguments` /
 * `invalid choice` / `the following arguments are required` errors (the caller exits 2), the `usage:`
 * and `--help` texts, and Python reprs for the `server_args=ServerArgs(...)` log line.
 */

/** @typedef {import("./sglang-flag-table.mjs").FlagSpec} FlagSpec */

export class ArgError extends Error {}

/** @param {string} text */
function pyRepr(text) {
  return `'${String(text).replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

/**
 * Parses argv like Python 3.12 argparse (allow_abbrev=True). Throws ArgError with argparse's
 * message (without the "prog: error: " prefix).
 * @param {FlagSpec[]} specs
 * @param {string[]} argv
 * @returns {{values: Record<string, unknown>, given: Set<string>, help: boolean}}
 */
export function parseArgs(specs, argv) {
  const byFlag = new Map();
  for (const spec of specs) for (const flag of spec.flags) byFlag.set(flag, spec);
  const allFlags = ["--help", ...byFlag.keys()];
  /** @type {Record<string, unknown>} */
  const values = {};
  for (const spec of specs) values[spec.dest] = spec.default ?? (spec.type === "bool" ? false : null);
  const given = new Set();
  const unknown = [];
  const looksLikeOption = (/** @type {string} */ a) => a.startsWith("-") && a !== "-" && !/^-\.?\d/.test(a);

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      unknown.push(...argv.slice(i + 1));
      break;
    }
    if (!looksLikeOption(arg)) {
      unknown.push(arg);
      continue;
    }
    let name = arg;
    let inline = null;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) {
      name = arg.slice(0, eq);
      inline = arg.slice(eq + 1);
    }
    if (name === "-h" || name === "--help") return { values, given, help: true };
    let spec = byFlag.get(name);
    if (!spec && name.startsWith("--")) {
      const candidates = allFlags.filter((fl) => fl.startsWith(name));
      if (candidates.length > 1) {
        throw new ArgError(`ambiguous option: ${name} could match ${candidates.join(", ")}`);
      }
      if (candidates.length === 1) {
        if (candidates[0] === "--help") return { values, given, help: true };
        spec = byFlag.get(candidates[0]);
      }
    }
    if (!spec) {
      unknown.push(arg);
      continue;
    }
    const label = spec.flags.join("/");
    let type = spec.type;
    if (type === "unknown") {
      const next = argv[i + 1];
      type = inline !== null || (next !== undefined && !looksLikeOption(next)) ? "str" : "bool";
    }
    given.add(spec.dest);
    if (type === "bool") {
      if (inline !== null)
        throw new ArgError(`argument ${label}: ignored explicit argument ${pyRepr(inline)}`);
      values[spec.dest] = true;
      continue;
    }
    if (type === "list") {
      const items = [];
      if (inline !== null) items.push(inline);
      while (inline === null && i + 1 < argv.length && !looksLikeOption(argv[i + 1])) items.push(argv[++i]);
      values[spec.dest] = items;
      continue;
    }
    let raw = inline;
    if (raw === null) {
      const next = argv[i + 1];
      if (next === undefined || looksLikeOption(next))
        throw new ArgError(`argument ${label}: expected one argument`);
      raw = next;
      i++;
    }
    values[spec.dest] = convert(spec, type, raw, label);
  }

  const missing = specs.filter((s) => s.required && !given.has(s.dest)).map((s) => s.flags.join("/"));
  if (missing.length > 0) throw new ArgError(`the following arguments are required: ${missing.join(", ")}`);
  if (unknown.length > 0) throw new ArgError(`unrecognized arguments: ${unknown.join(" ")}`);
  return { values, given, help: false };
}

/**
 * @param {FlagSpec} spec
 * @param {string} type
 * @param {string} raw
 * @param {string} label
 */
function convert(spec, type, raw, label) {
  let value;
  if (type === "int") {
    if (!/^\s*[+-]?\d+(_\d+)*\s*$/.test(raw))
      throw new ArgError(`argument ${label}: invalid int value: ${pyRepr(raw)}`);
    value = Number.parseInt(raw.replaceAll("_", ""), 10);
  } else if (type === "hint") {
    const m = /^\s*([+-]?\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*$/.exec(raw);
    if (!m) throw new ArgError(`argument ${label}: invalid human_readable_int value: ${pyRepr(raw)}`);
    const mult = { "": 1, k: 1000, m: 1_000_000, g: 1_000_000_000 }[m[2].toLowerCase()] ?? 1;
    value = Math.round(Number.parseFloat(m[1]) * mult);
  } else if (type === "float") {
    const v = Number(raw.trim());
    if (raw.trim() === "" || (Number.isNaN(v) && !/^\s*[+-]?nan\s*$/i.test(raw))) {
      throw new ArgError(`argument ${label}: invalid float value: ${pyRepr(raw)}`);
    }
    value = v;
  } else {
    value = raw;
  }
  if (spec.choices && !spec.choices.includes(value)) {
    const choices = spec.choices.map((c) => (typeof c === "string" ? pyRepr(c) : String(c))).join(", ");
    throw new ArgError(
      `argument ${label}: invalid choice: ${typeof value === "string" ? pyRepr(value) : value} (choose from ${choices})`,
    );
  }
  return value;
}

/** @param {FlagSpec} spec */
function metavar(spec) {
  if (spec.type === "bool") return "";
  if (spec.choices) return `{${spec.choices.join(",")}}`;
  const dest = spec.dest.toUpperCase();
  return spec.type === "list" ? `[${dest} ...]` : dest;
}

const WIDTH = Math.max(40, (Number.parseInt(process.env.COLUMNS ?? "", 10) || 80) - 2);

/**
 * argparse usage text ("usage: prog [-h] ...", wrapped).
 * @param {string} prog
 * @param {FlagSpec[]} specs
 */
export function formatUsage(prog, specs) {
  const parts = ["[-h]"];
  for (const spec of specs) {
    const mv = metavar(spec);
    const part = mv ? `${spec.flags[0]} ${mv}` : spec.flags[0];
    parts.push(spec.required ? part : `[${part}]`);
  }
  const prefix = `usage: ${prog} `;
  const indent = " ".repeat(prefix.length);
  const lines = [];
  let line = prefix;
  for (const part of parts) {
    if (line.length + part.length + 1 > WIDTH && line.trim() !== prefix.trim()) {
      lines.push(line.trimEnd());
      line = indent;
    }
    line += `${part} `;
  }
  lines.push(line.trimEnd());
  return `${lines.join("\n")}\n`;
}

/** @param {string} text @param {number} width */
function wrap(text, width) {
  const words = text.split(/\s+/).filter(Boolean);
  const lines = [];
  let line = "";
  for (const word of words) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  if (line !== "") lines.push(line);
  return lines;
}

/**
 * Full argparse --help text.
 * @param {string} prog
 * @param {FlagSpec[]} specs
 */
export function formatHelp(prog, specs) {
  const helpCol = 24;
  const out = [formatUsage(prog, specs), "options:\n"];
  const rows = [["-h, --help", "show this help message and exit"]];
  for (const spec of specs) {
    const mv = metavar(spec);
    const invocation = spec.flags.map((flag) => (mv ? `${flag} ${mv}` : flag)).join(", ");
    rows.push([invocation, spec.help ?? ""]);
  }
  for (const [invocation, help] of rows) {
    const head = `  ${invocation}`;
    const helpLines = help ? wrap(help, WIDTH - helpCol) : [];
    if (helpLines.length === 0) {
      out.push(`${head}\n`);
    } else if (head.length <= helpCol - 2) {
      out.push(`${head.padEnd(helpCol)}${helpLines[0]}\n`);
      for (const l of helpLines.slice(1)) out.push(`${" ".repeat(helpCol)}${l}\n`);
    } else {
      out.push(`${head}\n`);
      for (const l of helpLines) out.push(`${" ".repeat(helpCol)}${l}\n`);
    }
  }
  return out.join("");
}

/** Python repr of a value, for the `server_args=ServerArgs(...)` log line. */
export function pyValue(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return Number.isInteger(v) && !Number.isNaN(v) ? String(v) : String(v);
  if (Array.isArray(v)) return `[${v.map(pyValue).join(", ")}]`;
  return pyRepr(String(v));
}
