import type { z } from "zod";
import { splitProblem } from "../problem-text.ts";
import { accepted } from "./accepted.ts";
import type { ConfigProblem } from "./config-problem.ts";
import { didYouMean } from "./did-you-mean.ts";
import { schemaAt } from "./schema-at.ts";
import { looksSecret, showValue } from "./show-value.ts";

const SECRETS_FIX =
  "secrets never live in the config file: remove it and set the environment variable instead (SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_TOKEN, HF_TOKEN)";

/**
 * One zod issue as `config check` reports it: the setting's path, what is wrong and what is accepted,
 * what was given (shown safely), and a fix with an example. The schema's own `problem(what, fix)` text is
 * used where it has one; otherwise the words come from the issue and from the schema at its path (its
 * bounds, options, default), never zod's own "expected object, received undefined". An unknown key gets
 * "did you mean" from the keys known at its level.
 */
export function describeIssue(
  source: "env" | "file",
  issue: z.core.$ZodIssue,
  root: z.core.$ZodType,
  input: unknown,
): ConfigProblem[] {
  const path = formatPath(issue.path);
  const point = schemaAt(root, issue.path);
  if (issue.code === "unrecognized_keys") {
    const known = Object.keys(point?.def.shape ?? {});
    return issue.keys.map((key) => unknownKey(source, path === "" ? key : `${path}.${key}`, key, known));
  }
  const custom = splitProblem(issue.message);
  const value = valueAt(input, issue.path);
  const key = leafKey(issue.path);
  const setting = path === "" ? "(top level)" : path;
  const { words, example } = accepted(point);
  const sample =
    example === undefined ? undefined : source === "env" ? `${key}=${example}` : `${key}: ${example}`;
  const fix = (how: string) => custom.fix ?? (sample === undefined ? how : `${how}, e.g. ${sample}`);

  if (path === "" && source === "file" && issue.code === "invalid_type") {
    return [
      {
        source,
        path: setting,
        what: "the file must be a mapping of settings (slack:, requesters:, approvers:, hosts: …)",
        given: showValue("", value, true),
        fix: "start from modelswap.example.yaml, a complete commented example",
      },
    ];
  }
  if (issue.code === "invalid_type" && value === undefined) {
    return [
      { source, path: setting, what: custom.fix ? custom.what : `${path} is not set`, fix: fix("add it") },
    ];
  }
  // every variable is text: its type goes without saying
  const typed = source === "file" && issue.code === "invalid_type" && issue.expected !== "int";
  const given = value === undefined ? undefined : showValue(key, value, typed);
  if (issue.code === "invalid_type") {
    // the schema's own text, if any, is for a missing key ("hosts is not set"): a wrong type says what fits
    const how =
      point?.def.type === "array" && value !== null && typeof value !== "object"
        ? `write it as a list${looksSecret(key, value) ? "" : `, e.g. ${key}: [${String(value)}]`}`
        : `write ${words}`;
    return [
      {
        source,
        path: setting,
        what: `${custom.fix ? subject(custom.what) : ""}must be ${words}`,
        given,
        fix: fix(how),
      },
    ];
  }
  if (issue.code === "invalid_key" || issue.code === "invalid_element") {
    // a record's key (or a map's element) refused by its own schema: that schema's text says what fits
    const nested = (issue as { issues?: z.core.$ZodIssue[] }).issues ?? [];
    const said = nested.map((n) => splitProblem(n.message)).find((p) => p.fix !== undefined);
    if (said?.fix !== undefined) {
      return [{ source, path: setting, what: said.what, given: JSON.stringify(key), fix: said.fix }];
    }
  }
  if (custom.fix !== undefined) return [{ source, path: setting, what: custom.what, given, fix: custom.fix }];
  if (issue.code === "too_small" || issue.code === "too_big" || issue.code === "invalid_value") {
    return [{ source, path: setting, what: `must be ${words}`, given, fix: fix(`use ${words}`) }];
  }
  return [
    {
      source,
      path: setting,
      what: `is not accepted here (${words} is)`,
      given,
      fix: fix("see the configuration reference in README.md for what this setting accepts"),
    },
  ];
}

function unknownKey(source: "env" | "file", path: string, key: string, known: string[]): ConfigProblem {
  if (looksSecret(key, undefined)) return { source, path, what: "unknown setting", fix: SECRETS_FIX };
  const meant = didYouMean(key, known);
  const here = `the settings here are: ${known.join(", ")}`;
  return meant === undefined
    ? { source, path, what: "unknown setting", fix: `remove it, or correct its spelling; ${here}` }
    : {
        source,
        path,
        what: `unknown setting: did you mean ${meant}?`,
        fix: `rename ${key} to ${meant} (${here})`,
      };
}

/** "hosts is not set" → "hosts ": the name the schema's own message gives the setting, if it gives one. */
function subject(what: string): string {
  const at = what.indexOf(" is not set");
  return at < 0 ? "" : `${what.slice(0, at)} `;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const part of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[part];
  }
  return value;
}

function leafKey(path: readonly PropertyKey[]): string {
  const named = path.filter((part) => typeof part !== "number");
  return String(named[named.length - 1] ?? "");
}

export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join("");
}
