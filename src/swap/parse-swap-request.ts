import { z } from "zod";
import type { ModelRef } from "../hub/types.ts";

/** Repo ids on the Hub: `org/name`, each part letters, digits, `.`, `_`, `-` (not starting with `.` or `-`). */
const PART = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}$/;
/** Revisions: branch or tag names and commit shas; no `..`, no shell characters. */
const REVISION = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,127}$/;
/** Engine refs: the same characters as revisions. */
const ENGINE_REF = REVISION;

export const ACCEPTED_FORMS = [
  "https://huggingface.co/<org>/<name>",
  "https://huggingface.co/<org>/<name>/tree/<revision>",
  "https://hf.co/<org>/<name>",
  "hf://<org>/<name>[@<revision>]",
  "<org>/<name>[@<revision>]",
];

export const SWAP_USAGE =
  "/llm swap <huggingface-url> [--host <host>] [--tp <n>] [--dry-run] [--engine-ref <git ref>]";

export interface SwapRequest {
  model: ModelRef;
  host: string | undefined;
  tp: number | undefined;
  dryRun: boolean;
  engineRef: string;
}

export type ParseResult = { ok: true; request: SwapRequest } | { ok: false; reason: string };

const modelRef = z
  .object({ org: z.string().regex(PART), name: z.string().regex(PART), revision: z.string().regex(REVISION) })
  .refine((r) => !r.revision.includes("..") && !r.revision.endsWith("/") && !r.revision.endsWith(".lock"));

/**
 * Parses the words after `/llm swap`. Only the accepted forms pass; everything that reaches a shell later
 * has matched one of the narrow patterns above (and is still quoted by `quote`).
 */
export function parseSwapRequest(args: readonly string[]): ParseResult {
  let model: ModelRef | undefined;
  let host: string | undefined;
  let tp: number | undefined;
  let dryRun = false;
  let engineRef = "main";
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    const value = () => args[++i];
    switch (word) {
      case "--host": {
        const v = value();
        if (v === undefined || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(v)) return fail("--host needs a host name");
        host = v;
        break;
      }
      case "--tp": {
        const v = value();
        if (v === undefined || !/^[1-9][0-9]?$/.test(v)) return fail("--tp needs a number of GPUs (1–99)");
        tp = Number(v);
        break;
      }
      case "--dry-run":
        dryRun = true;
        break;
      case "--engine-ref": {
        const v = value();
        if (v === undefined || !ENGINE_REF.test(v) || v.includes("..")) {
          return fail("--engine-ref needs a git branch, tag or commit (letters, digits, . _ / -)");
        }
        engineRef = v;
        break;
      }
      default: {
        if (word.startsWith("-")) return fail(`unknown option ${word}`);
        if (model !== undefined) return fail("name one model only");
        const parsed = parseModelRef(word);
        if (parsed === undefined) return fail("that is not a Hugging Face model reference");
        model = parsed;
      }
    }
  }
  if (model === undefined) return fail("name the model to swap to");
  return { ok: true, request: { model, host, tp, dryRun, engineRef } };
}

/** One model reference in any accepted form; Slack's `<url>` and `<url|label>` wrapping is removed. */
export function parseModelRef(input: string): ModelRef | undefined {
  let text = input;
  const wrapped = /^<([^<>|]+)(?:\|[^<>]*)?>$/.exec(text);
  if (wrapped !== null) text = wrapped[1]!;
  if (text.length > 300) return undefined;

  let revision = "main";
  const url = /^https:\/\/(?:huggingface\.co|hf\.co)\/([^/]+)\/([^/]+)(?:\/tree\/(.+?))?\/?$/.exec(text);
  const hf = /^hf:\/\/([^/@]+)\/([^/@]+)(?:@(.+))?$/.exec(text);
  const bare = /^([^/@:]+)\/([^/@:]+)(?:@(.+))?$/.exec(text);
  const match = url ?? hf ?? bare;
  if (match === null) return undefined;
  if (match[3] !== undefined) revision = match[3];
  const checked = modelRef.safeParse({ org: match[1], name: match[2], revision });
  if (!checked.success) return undefined;
  return { repo: `${checked.data.org}/${checked.data.name}`, revision: checked.data.revision };
}

function fail(reason: string): ParseResult {
  return { ok: false, reason };
}
