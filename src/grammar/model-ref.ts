import { z } from "zod";
import type { ModelRef } from "../hub/types.ts";

/** Repo ids on the Hub: `org/name`, each part letters, digits, `.`, `_`, `-` (not starting with `.` or `-`). */
const PART = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}$/;
/** Revisions: branch or tag names and commit shas; no `..`, no shell characters. */
const REVISION = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,127}$/;

/** Every form a model may be named in; anything else is refused with this list. */
export const ACCEPTED_FORMS = [
  "https://huggingface.co/<org>/<name>",
  "https://huggingface.co/<org>/<name>/tree/<revision>",
  "https://hf.co/<org>/<name>",
  "hf://<org>/<name>[@<revision>]",
  "<org>/<name>[@<revision>]",
];

const modelRef = z
  .object({ org: z.string().regex(PART), name: z.string().regex(PART), revision: z.string().regex(REVISION) })
  .refine((r) => !r.revision.includes("..") && !r.revision.endsWith("/") && !r.revision.endsWith(".lock"));

/**
 * The number of a Hub pull-request revision (`refs/pr/N`), or undefined for the repo's own branches,
 * tags and commits. Anyone can open a pull request on any public repo.
 */
export function hubPullRequest(revision: string): number | undefined {
  const m = /^refs\/pr\/(\d{1,9})$/.exec(revision);
  return m === null ? undefined : Number(m[1]);
}

/** Why a Hub pull-request revision is refused while hub.allowPullRequests is off. */
export function hubPullRequestRefusal(repo: string, pullRequest: number): string {
  return `${repo}@refs/pr/${pullRequest} is Hub pull request #${pullRequest}, not the repo's own: anyone can open one on any public repo, so modelswap serves only its branches, tags and commits (an admin may set hub.allowPullRequests: true)`;
}

/** A repo id (`org/name`) as the Hub spells it. */
export function isRepoId(text: string): boolean {
  const [org, name, ...rest] = text.split("/");
  return rest.length === 0 && PART.test(org ?? "") && PART.test(name ?? "");
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
