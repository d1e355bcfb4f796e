/**
 * vLLM's command line as the simulated `vllm serve` and `python -m vllm.entrypoints.openai.api_server`
 * parse it: FlexibleArgumentParser (vllm/utils/argparse_utils.py) over Python 3.12 argparse.
 *
 * Parsing (FlexibleArgumentParser.parse_args, then argparse): `--flag_name` is read as `--flag-name`;
 * `--help=<keyword>` selects what the help shows; under `serve`, `--model X` is moved to the positional
 * model_tag with vLLM's warning; argparse's unique-prefix abbreviations, `--flag=value`, single-dash
 * aliases (`-tp 2`), BooleanOptionalAction (`--x` / `--no-x`), nargs '+'. Errors as argparse words them:
 * `unrecognized arguments` is raised by the TOP parser (`usage: vllm [-h] [-v] {...} ...` + `vllm: error:`,
 * as argparse's subparser hands unknown arguments back to its parent), every other error by the serve
 * subparser (`usage: vllm serve [model_tag] [options]` + `vllm serve: error:`); the caller exits 2.
 *
 * Help (FlexibleArgumentParser.format_help, SortedHelpFormatter = ArgumentDefaultsHelpFormatter +
 * RawDescriptionHelpFormatter, options sorted by their option strings): plain `--help` prints the usage,
 * the description, a "Config Groups:" section (`f"{title: <24}{description}"` per group that has
 * arguments) and the epilog; `--help=all` prints argparse's full help (every option line indented two
 * spaces, `--flag METAVAR`, choices as `{a,b}`, " (default: X)" appended); `--help=<Group>` one group;
 * any other keyword the options whose name contains it.
 */
import { VLLM_FLAGS as ALL_FLAGS, GROUPS } from "./vllm-flag-table.mjs";
import { omittedFlags } from "./vllm-host.mjs";

/** The flags of the installed vLLM: the table, less those its source lacks (vllm-host.mjs). */
const VLLM_FLAGS = (() => {
  const omitted = omittedFlags();
  return ALL_FLAGS.filter((s) => !s.flags?.some((f) => omitted.includes(f)));
})();

/** @typedef {import("./vllm-flag-table.mjs").VllmFlag} VllmFlag */

export class VllmArgError extends Error {
  /** @param {string} message @param {"top" | "sub"} raisedBy */
  constructor(message, raisedBy = "sub") {
    super(message);
    this.raisedBy = raisedBy;
  }
}

/** vLLM's epilog of every subcommand parser (vllm/entrypoints/utils.py VLLM_SUBCMD_PARSER_EPILOG). */
export function subcmdEpilog(subcmd) {
  return [
    `For full list:            vllm ${subcmd} --help=all`,
    `For a section:            vllm ${subcmd} --help=ModelConfig    (case-insensitive)`,
    `For a flag:               vllm ${subcmd} --help=max-model-len  (_ or - accepted)`,
    "Documentation:            https://docs.vllm.ai",
    "",
  ].join("\n");
}

/** `vllm serve`'s description (vllm/entrypoints/cli/serve.py). */
export const SERVE_DESCRIPTION = `Launch a local OpenAI-compatible API server to serve LLM
completions via HTTP. Defaults to Qwen/Qwen3-0.6B if no model is specified.

Search by using: \`--help=<ConfigGroup>\` to explore options by section (e.g.,
--help=ModelConfig, --help=Frontend)
  Use \`--help=all\` to show all available flags at once.
`;

/** FlexibleArgumentParser._json_tip, the epilog of `--help=all` and of a group's help. */
const JSON_TIP =
  "When passing JSON CLI arguments, the following sets of arguments are equivalent:\n" +
  '   --json-arg \'{"key1": "value1", "key2": {"key3": "value2"}}\'\n' +
  "   --json-arg.key1 value1 --json-arg.key2.key3 value2\n\n" +
  "Additionally, list elements can be passed individually using +:\n" +
  '   --json-arg \'{"key4": ["value3", "value4", "value5"]}\'\n' +
  "   --json-arg.key4+ value3 --json-arg.key4+='value4,value5'\n\n";

/** The top-level `vllm` parser's usage (vllm/entrypoints/cli/main.py, the 0.18 subcommands). */
export const TOP_USAGE = "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\n";

/** @param {string} text */
function pyRepr(text) {
  return `'${String(text).replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

/** @param {VllmFlag} spec */
function label(spec) {
  if (spec.type === "optbool") return spec.flags.flatMap((f) => [f, f.replace(/^--/, "--no-")]).join("/");
  return spec.flags.join("/");
}

/**
 * Parses `serve` arguments. Returns { values, given, help } where help is null, "" (plain --help) or the
 * --help=<keyword>. Throws VllmArgError.
 * @param {string[]} argv arguments after `serve` (or after the module for api_server.py)
 * @param {{ serve: boolean, warn?: (msg: string) => void }} opts
 */
export function parseServeArgs(argv, opts) {
  let args = [...argv];
  let help = null;
  // FlexibleArgumentParser.parse_args: under `serve`, `--model X` moves to the positional model_tag.
  if (opts.serve) {
    const idx = args.findIndex((a) => a === "--model" || a.startsWith("--model="));
    if (idx >= 0) {
      opts.warn?.(
        "With `vllm serve`, you should provide the model as a positional argument or in a config file instead of via the `--model` option. The `--model` option will be removed in a future version.",
      );
      let tag;
      let rest;
      if (args[idx] === "--model") {
        if (idx + 1 >= args.length || args[idx + 1].startsWith("-"))
          throw new VllmArgError("argument --model: expected one argument");
        tag = args[idx + 1];
        rest = idx + 2;
      } else {
        tag = args[idx].slice("--model=".length);
        rest = idx + 1;
      }
      args = [tag, ...args.slice(0, idx), ...args.slice(rest)];
    }
  }
  // underscores → dashes in flag names; --help=<keyword>
  args = args.map((a) => {
    if (a.startsWith("--help=")) {
      help = a.slice("--help=".length).toLowerCase();
      return "--help";
    }
    if (!a.startsWith("--")) return a;
    const eq = a.indexOf("=");
    const key = eq > 0 ? a.slice(0, eq) : a;
    const dot = key.indexOf(".");
    const name = dot > 0 ? key.slice(0, dot) : key;
    return `${name.replaceAll("_", "-")}${key.slice(name.length)}${eq > 0 ? a.slice(eq) : ""}`;
  });

  const specs = VLLM_FLAGS.filter((s) => !s.positional);
  const byFlag = new Map();
  for (const spec of specs) {
    for (const flag of spec.flags) byFlag.set(flag, { spec, negated: false });
    if (spec.type === "optbool")
      for (const flag of spec.flags)
        if (flag.startsWith("--")) byFlag.set(flag.replace(/^--/, "--no-"), { spec, negated: true });
  }
  const longFlags = ["--help", ...[...byFlag.keys()].filter((f) => f.startsWith("--"))];
  /** @type {Record<string, unknown>} */
  const values = {};
  for (const spec of VLLM_FLAGS) values[spec.dest] = spec.default ?? null;
  const given = new Set();
  const unknown = [];
  const looksLikeOption = (/** @type {string} */ a) => a.startsWith("-") && a !== "-" && !/^-\.?\d/.test(a);
  let positionalTaken = false;

  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      unknown.push(...args.slice(i + 1));
      break;
    }
    if (!looksLikeOption(arg)) {
      if (!positionalTaken && opts.serve) {
        values.model_tag = arg;
        given.add("model_tag");
        positionalTaken = true;
      } else {
        unknown.push(arg);
      }
      continue;
    }
    let name = arg;
    let inline = null;
    const eq = arg.indexOf("=");
    if (eq > 0) {
      name = arg.slice(0, eq);
      inline = arg.slice(eq + 1);
    }
    if (name === "-h" || name === "--help") return { values, given, help: help ?? "" };
    let hit = byFlag.get(name);
    if (!hit && name.startsWith("--")) {
      const candidates = longFlags.filter((fl) => fl.startsWith(name));
      if (candidates.length > 1)
        throw new VllmArgError(`ambiguous option: ${name} could match ${candidates.join(", ")}`);
      if (candidates.length === 1) {
        if (candidates[0] === "--help") return { values, given, help: help ?? "" };
        hit = byFlag.get(candidates[0]);
      }
    }
    if (!hit) {
      unknown.push(arg);
      continue;
    }
    const { spec, negated } = hit;
    given.add(spec.dest);
    if (spec.type === "bool" || spec.type === "optbool") {
      if (inline !== null)
        throw new VllmArgError(`argument ${label(spec)}: ignored explicit argument ${pyRepr(inline)}`);
      values[spec.dest] = !negated;
      continue;
    }
    if (spec.type === "list") {
      const items = [];
      if (inline !== null) items.push(inline);
      while (inline === null && i + 1 < args.length && !looksLikeOption(args[i + 1])) items.push(args[++i]);
      if (items.length === 0)
        throw new VllmArgError(`argument ${label(spec)}: expected at least one argument`);
      values[spec.dest] = items;
      continue;
    }
    let raw = inline;
    if (raw === null) {
      const next = args[i + 1];
      if (next === undefined || looksLikeOption(next))
        throw new VllmArgError(`argument ${label(spec)}: expected one argument`);
      raw = next;
      i++;
    }
    values[spec.dest] = convert(spec, raw);
  }
  if (unknown.length > 0) throw new VllmArgError(`unrecognized arguments: ${unknown.join(" ")}`, "top");
  if (help !== null) return { values, given, help };
  return { values, given, help: null };
}

/** @param {VllmFlag} spec @param {string} raw */
function convert(spec, raw) {
  const where = `argument ${label(spec)}`;
  let value;
  if (spec.type === "int") {
    if (!/^\s*[+-]?\d+(_\d+)*\s*$/.test(raw))
      throw new VllmArgError(`${where}: invalid int value: ${pyRepr(raw)}`);
    value = Number.parseInt(raw.replaceAll("_", ""), 10);
  } else if (spec.type === "hint") {
    // vllm/utils/argparse_utils.py human_readable_int: 1k = 1000, 1K = 1024, 25.6k = 25600
    const m = /^\s*(\d+(?:\.\d+)?)([kKmMgGtT])\s*$/.exec(raw);
    if (m) {
      const dec = { k: 1e3, m: 1e6, g: 1e9, t: 1e12 }[m[2]];
      const bin = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 }[m[2]];
      if (dec) value = Math.trunc(Number(m[1]) * dec);
      else if (!m[1].includes(".")) value = Number(m[1]) * (bin ?? 1);
      else throw new VllmArgError(`${where}: invalid human_readable_int value: ${pyRepr(raw)}`);
    } else if (/^\s*[+-]?\d+\s*$/.test(raw)) {
      value = Number.parseInt(raw, 10);
    } else {
      throw new VllmArgError(`${where}: invalid human_readable_int value: ${pyRepr(raw)}`);
    }
  } else if (spec.type === "float") {
    const v = Number(raw.trim());
    if (raw.trim() === "" || (Number.isNaN(v) && !/^\s*[+-]?nan\s*$/i.test(raw)))
      throw new VllmArgError(`${where}: invalid float value: ${pyRepr(raw)}`);
    value = v;
  } else {
    value = raw;
  }
  if (spec.choices && !spec.choices.includes(String(value))) {
    const numeric = spec.type === "int";
    const list = spec.choices.map((c) => (numeric ? c : pyRepr(c))).join(", ");
    throw new VllmArgError(
      `${where}: invalid choice: ${numeric ? value : pyRepr(String(value))} (choose from ${list})`,
    );
  }
  return value;
}

// ------------------------------------------------------------------------------------------------
// Help

const WIDTH = Math.max(40, (Number.parseInt(process.env.COLUMNS ?? "", 10) || 80) - 2);
const HELP_POSITION = 24;

/** Python's str() of a default value. @param {unknown} v */
function pyStr(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  return String(v);
}

/** @param {VllmFlag} spec */
function metavar(spec) {
  if (spec.metavar) return spec.metavar;
  if (spec.choices) return `{${spec.choices.join(",")}}`;
  return spec.dest.toUpperCase();
}

/** argparse's invocation column: "--x X, -x X", "--x, --no-x", "--flag". @param {VllmFlag} spec */
function invocation(spec) {
  if (spec.positional) return spec.dest;
  if (spec.type === "bool") return spec.flags.join(", ");
  if (spec.type === "optbool")
    return spec.flags.flatMap((f) => (f.startsWith("--") ? [f, f.replace(/^--/, "--no-")] : [f])).join(", ");
  const mv = metavar(spec);
  const value = spec.type === "list" ? `${mv} [${mv} ...]` : mv;
  return spec.flags.map((f) => `${f} ${value}`).join(", ");
}

/** SortedHelpFormatter._split_lines: single newlines joined, then each paragraph wrapped. */
function wrap(text, width) {
  const out = [];
  for (const para of text.replace(/(?<!\n)\n(?!\n)\s*/g, " ").split(/\n+/)) {
    let line = "";
    for (const word of para.split(/\s+/).filter(Boolean)) {
      if (line !== "" && line.length + 1 + word.length > width) {
        out.push(line);
        line = word;
      } else line = line === "" ? word : `${line} ${word}`;
    }
    if (line !== "") out.push(line);
  }
  return out;
}

/** One action's lines, as argparse's HelpFormatter._format_action lays them out. @param {VllmFlag} spec */
function formatAction(spec) {
  const inv = invocation(spec);
  let help = spec.help;
  // ArgumentDefaultsHelpFormatter: options, and positionals with nargs '?', get their default
  if (spec.dest !== "help") help = `${help} (default: ${pyStr(spec.default)})`; // -h's default is SUPPRESS
  const lines = wrap(help, Math.max(WIDTH - HELP_POSITION, 11));
  const head = `  ${inv}`;
  if (head.length <= HELP_POSITION - 2) {
    return [
      `${head.padEnd(HELP_POSITION)}${lines[0] ?? ""}`,
      ...lines.slice(1).map((l) => " ".repeat(HELP_POSITION) + l),
    ];
  }
  return [head, ...lines.map((l) => " ".repeat(HELP_POSITION) + l)];
}

const HELP_ACTION = {
  group: "options",
  flags: ["-h", "--help"],
  dest: "help",
  type: /** @type {const} */ ("bool"),
  help: "show this help message and exit",
  default: null,
};

/** Sorted actions of one group (SortedHelpFormatter sorts by option_strings). @param {string} title */
function groupActions(title) {
  const actions = VLLM_FLAGS.filter((s) => s.group === title);
  if (title === "options") actions.push(/** @type {any} */ (HELP_ACTION));
  const key = (/** @type {VllmFlag} */ s) => (s.positional ? [] : s.flags);
  return actions.sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
      if (ka[i] !== kb[i]) return ka[i] < kb[i] ? -1 : 1;
    }
    return ka.length - kb.length;
  });
}

/** A group's section: "Title:" (+ indented description) + its actions. @param {string} title @param {string} description */
function section(title, description) {
  const lines = [`${title}:`];
  if (description) {
    for (const l of description.split("\n")) lines.push(l.trim() === "" ? "" : `  ${l}`);
    lines.push("");
  }
  for (const spec of groupActions(title)) lines.push(...formatAction(spec));
  return lines.join("\n");
}

/** Collapses 3+ newlines and trims like argparse's format_help. @param {string} text */
function finish(text) {
  return `${text.replace(/\n\n\n+/g, "\n\n").replace(/^\n+|\n+$/g, "")}\n`;
}

/**
 * The help text for `--help` (keyword ""), `--help=all`, `--help=<Group>` or `--help=<keyword>`.
 * @param {string} usage e.g. "vllm serve [model_tag] [options]"
 * @param {string} description
 * @param {string} epilog
 * @param {string} keyword
 */
export function formatServeHelp(usage, description, epilog, keyword) {
  const groups = GROUPS.filter(([title]) => groupActions(title).length > 0);
  const search = keyword.toLowerCase().replaceAll("_", "-");
  if (keyword === "") {
    const rows = groups
      .map(([title, desc]) => {
        const first = `${title.padEnd(24)}${desc}`;
        return first
          .split("\n")
          .map((l) => `  ${l}`)
          .join("\n");
      })
      .join("\n");
    return finish(`usage: ${usage}\n\n${description}\nConfig Groups:\n${rows}\n\n${epilog}`);
  }
  if (search === "all") {
    const sections = groups.map(([title, desc]) => section(title, desc)).join("\n\n");
    return finish(`usage: ${usage}\n\n${description}\n${sections}\n\n${JSON_TIP}`);
  }
  const group = groups.find(([title]) => title.toLowerCase() === search);
  if (group) return finish(`${section(group[0], group[1])}\n\n${JSON_TIP}`);
  const matched = VLLM_FLAGS.filter(
    (s) => !s.positional && s.flags.some((f) => f.toLowerCase().includes(search)),
  );
  if (matched.length > 0) {
    const lines = [`Arguments matching '${search}':`];
    for (const spec of matched) lines.push(...formatAction(spec));
    return finish(`${lines.join("\n")}\n\n${JSON_TIP}`);
  }
  return finish(
    `No group or arguments matching '${search}'.\nUse '--help' to see available groups or '--help=all' to see all available parameters.\n`,
  );
}

/** `vllm --help` (the top parser: subcommands, -h, -v; the epilog for "[subcommand]"). */
export function formatTopHelp() {
  return finish(
    [
      TOP_USAGE,
      "vLLM CLI",
      "",
      "positional arguments:",
      "  {chat,complete,serve,bench,collect-env,run-batch}",
      "    chat                Generate chat completions via the running API server.",
      "    complete            Generate text completions based on the given prompt",
      "                        via the running API server.",
      "    serve               Launch a local OpenAI-compatible API server to serve",
      "                        LLM completions via HTTP.",
      "    bench               vLLM bench subcommand.",
      "    collect-env         Start collecting environment information.",
      "    run-batch           Run batch prompts and write results to file.",
      "",
      "options:",
      "  -h, --help            show this help message and exit",
      "  -v, --version         show program's version number and exit",
      "",
      subcmdEpilog("[subcommand]"),
    ].join("\n"),
  );
}
