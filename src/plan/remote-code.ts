import { isRepoId } from "../grammar/model-ref.ts";
import { CODE_CONFIG_FILES, type ModelInfo } from "../hub/types.ts";
import type { RemoteCode, RemoteCodeFile } from "./types.ts";

/**
 * Which of a repo's Python runs when an engine loads the model with --trust-remote-code, decided from the
 * repo's own files, never from a recipe or a model family: every auto_map transformers reads (config.json
 * and the configs nested in it, tokenizer_config.json, processor_config.json, preprocessor_config.json,
 * video_preprocessor_config.json: CODE_CONFIG_FILES), and the repo's *.py.
 *
 * An auto_map value is a class reference, `module.Class` (the repo's `module.py`) or
 * `org/name--module.Class` (`module.py` of another repo, at that repo's main branch:
 * transformers' get_class_from_dynamic_module), or a list of them (a tokenizer's slow and fast class),
 * null meaning none. `"auto_map": {}` names no code. A value modelswap cannot read as a reference is
 * kept as unreadable: the plan cannot say what it would run, so it is refused.
 *
 * Every name here comes from the Hub: modules and repos are admitted only in the characters their
 * grammar allows (a Python identifier, a Hub repo id), and lists are bounded, so a repo cannot grow a
 * plan past Slack's limits. None of them reaches a shell: they are shown, never run.
 */

/** At most this many names of each kind are kept; the rest are counted. */
export const REMOTE_CODE_MAX_NAMES = 20;
const MAX_UNREADABLE_SHOWN = 3;
const MODULE = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
const CLASS = /^[A-Za-z_][A-Za-z0-9_]{0,199}$/;
const NESTED_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The parts of a class reference, or undefined when it is not one transformers could load. */
export function readClassReference(reference: string): { module: string; repo?: string } | undefined {
  const parts = reference.split("--");
  if (parts.length > 2) return undefined;
  const [repo, local] = parts.length === 2 ? [parts[0]!, parts[1]!] : [undefined, parts[0]!];
  if (repo !== undefined && !isRepoId(repo)) return undefined;
  const names = local.split(".");
  if (names.length !== 2 || !MODULE.test(names[0]!) || !CLASS.test(names[1]!)) return undefined;
  return { module: names[0]!, ...(repo === undefined ? {} : { repo }) };
}

/** The class references of one auto_map (strings), and the values that are none (unreadable). */
function referencesOf(autoMap: unknown): { references: string[]; unreadable: unknown[] } {
  const references: string[] = [];
  const unreadable: unknown[] = [];
  const take = (value: unknown, inList: boolean) => {
    if (value === null) return;
    if (typeof value === "string") references.push(value);
    else if (Array.isArray(value) && !inList) for (const v of value) take(v, true);
    else unreadable.push(value);
  };
  if (autoMap === undefined || autoMap === null) return { references, unreadable };
  // a list is the tokenizer's legacy form: [slow, fast]
  if (Array.isArray(autoMap)) for (const v of autoMap) take(v, true);
  else if (isObject(autoMap)) for (const v of Object.values(autoMap)) take(v, false);
  else unreadable.push(autoMap);
  return { references, unreadable };
}

/** Each auto_map transformers may follow, with the config that holds it ("config.json text_config"). */
function autoMaps(info: Pick<ModelInfo, "config" | "codeConfigs">): { namedBy: string; autoMap: unknown }[] {
  const found: { namedBy: string; autoMap: unknown }[] = [];
  if (info.config.auto_map !== undefined)
    found.push({ namedBy: "config.json", autoMap: info.config.auto_map });
  // sub-configs (text_config, vision_config, …) are configs of their own, and may carry their own auto_map
  let unnamed = 0;
  for (const [key, value] of Object.entries(info.config)) {
    if (!isObject(value) || value.auto_map === undefined) continue;
    if (NESTED_KEY.test(key)) found.push({ namedBy: `config.json ${key}`, autoMap: value.auto_map });
    else found.push({ namedBy: `config.json (nested config ${++unnamed})`, autoMap: value.auto_map });
  }
  for (const name of CODE_CONFIG_FILES) {
    const config = info.codeConfigs[name];
    if (config?.auto_map !== undefined) found.push({ namedBy: name, autoMap: config.auto_map });
  }
  return found;
}

/** An unreadable value as it may be shown: JSON, cut at 60 characters, anything not plain ASCII escaped. */
function showValue(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  const cut = text.length > 60 ? `${text.slice(0, 60)}…` : text;
  return cut.replace(/[^\x20-\x7e…]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * The repo's Python that runs with --trust-remote-code, or undefined when no config names any (the flag
 * is then never planned). Bounded: REMOTE_CODE_MAX_NAMES names of each kind, then a count.
 */
export function remoteCodeOf(
  info: Pick<ModelInfo, "repo" | "config" | "codeConfigs" | "files">,
): RemoteCode | undefined {
  const byKey = new Map<string, RemoteCodeFile>();
  const otherRepos = new Map<string, string>();
  const unreadable: string[] = [];
  const own = info.repo.toLowerCase();
  for (const { namedBy, autoMap } of autoMaps(info)) {
    const { references, unreadable: odd } = referencesOf(autoMap);
    for (const value of odd) unreadable.push(`${showValue(value)} (${namedBy} auto_map)`);
    for (const reference of references) {
      const read = readClassReference(reference);
      if (read === undefined) {
        unreadable.push(`${showValue(reference)} (${namedBy} auto_map)`);
        continue;
      }
      const repo = read.repo !== undefined && read.repo.toLowerCase() !== own ? read.repo : undefined;
      const file = `${read.module}.py`;
      const key = `${repo?.toLowerCase() ?? ""}\0${file}`;
      const entry = byKey.get(key) ?? {
        file,
        ...(repo === undefined ? {} : { repo }),
        namedBy: [],
        ...(repo === undefined && !info.files.some((f) => f.path === file) ? { missing: true } : {}),
      };
      if (!entry.namedBy.includes(namedBy)) entry.namedBy.push(namedBy);
      byKey.set(key, entry);
      if (repo !== undefined && !otherRepos.has(repo.toLowerCase())) otherRepos.set(repo.toLowerCase(), repo);
    }
  }
  if (byKey.size === 0 && unreadable.length === 0) return undefined;
  // the repo's own files first: the others come from repos the plan also names
  const files = [...byKey.values()].sort(
    (a, b) => Number(a.repo !== undefined) - Number(b.repo !== undefined),
  );
  const named = new Set(files.filter((f) => f.repo === undefined).map((f) => f.file));
  const otherPy = info.files
    .map((f) => f.path)
    .filter((p) => p.endsWith(".py") && !named.has(p))
    .sort();
  const repos = [...otherRepos.values()];
  const max = REMOTE_CODE_MAX_NAMES;
  return {
    files: files.slice(0, max),
    moreFiles: Math.max(0, files.length - max),
    otherRepos: repos.slice(0, max),
    moreOtherRepos: Math.max(0, repos.length - max),
    unreadable: unreadable.slice(0, MAX_UNREADABLE_SHOWN),
    moreUnreadable: Math.max(0, unreadable.length - MAX_UNREADABLE_SHOWN),
    otherPy: otherPy.slice(0, max),
    moreOtherPy: Math.max(0, otherPy.length - max),
  };
}

/** How names and untrusted text are written: plain for checks and reasons, code spans in Slack. */
export interface RemoteCodeStyle {
  /** A file or repo name (validated: identifiers, repo ids). */
  name: (text: string) => string;
  /** Anything else taken from the Hub (an unreadable auto_map value). */
  text: (text: string) => string;
}

export const PLAIN: RemoteCodeStyle = { name: (t) => t, text: (t) => t };

/**
 * The files that will run, in one line: "tokenization_kimi.py (tokenizer_config.json auto_map),
 * configuration_deepseek.py and modeling_deepseek.py (config.json auto_map)". Files named by the same
 * configs are said together; at most `budget` characters of names and their configs, the rest counted;
 * then at most 3 unreadable entries and 5 of the repo's other .py files (60 characters each), so the
 * line stays under budget + about 700 characters whatever the repo holds.
 */
export function describeRemoteCode(code: RemoteCode, style: RemoteCodeStyle = PLAIN, budget = 600): string {
  const groups: { namedBy: string; names: string[] }[] = [];
  let used = 0;
  let left = code.moreFiles;
  for (const f of code.files) {
    const namedBy = `${f.namedBy.join(", ")} auto_map${f.missing === true ? "; not in the repo" : ""}${f.repo === undefined ? "" : "; another repo's code, at its main branch"}`;
    const name = f.repo === undefined ? style.name(f.file) : `${style.name(f.file)} of ${style.name(f.repo)}`;
    const last = groups.at(-1);
    const cost = last?.namedBy === namedBy ? name.length + 2 : name.length + namedBy.length + 5;
    if (used + cost > budget) {
      left += 1;
      continue;
    }
    used += cost;
    if (last?.namedBy === namedBy) last.names.push(name);
    else groups.push({ namedBy, names: [name] });
  }
  const parts = groups.map((g) => `${joinAnd(g.names)} (${g.namedBy})`);
  if (left > 0) parts.push(`${left} more ${left === 1 ? "file" : "files"}`);
  const unreadable = code.unreadable.length + code.moreUnreadable;
  if (unreadable > 0) {
    const shown = code.unreadable.map((u) => style.text(u)).join(", ");
    const more = code.moreUnreadable > 0 ? ` and ${code.moreUnreadable} more` : "";
    parts.push(`code modelswap cannot name: ${shown}${more}`);
  }
  const otherPy = code.otherPy.length + code.moreOtherPy;
  if (otherPy > 0 && code.files.some((f) => f.repo === undefined)) {
    const names = code.otherPy.filter((p) => p.length <= 60).slice(0, 5);
    const rest = otherPy - names.length;
    const listed = names.map((p) => style.name(p)).join(", ");
    return `${parts.join(", ")}; they may import the repo's other .py ${otherPy === 1 ? "file" : "files"} (${listed}${rest > 0 ? `${names.length > 0 ? " and " : ""}${rest} more` : ""})`;
  }
  return parts.join(", ");
}

function joinAnd(names: readonly string[]): string {
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

/** The orgs whose code runs: the model's own and every other repo's an auto_map names (lower-case, once). */
export function remoteCodeOrgs(repo: string, code: RemoteCode): string[] {
  const orgs = [repo, ...code.otherRepos].map((r) => r.split("/")[0] ?? "");
  return [...new Map(orgs.map((o) => [o.toLowerCase(), o])).values()];
}
