import { z } from "zod";

/** A model on the Hub as a user names it: its repository, and the revision they asked for. */
export interface ModelRef {
  repo: string;
  /** What the user asked for; `main` when they named none. */
  revision: string;
}

/**
 * A part of a repo id (`org` or `name`) as the Hub admits it (huggingface_hub's validate_repo_id):
 * letters, digits, `.`, `_`, `-`, at most 96, starting and ending with a letter, digit or `_`.
 */
const REPO_PART = /^[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$/;
/** A revision's characters: branch or tag names and commit shas, no shell characters, not an option. */
const REVISION_CHARS = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,127}$/;

/** The rules of a repo id part, as a refusal says them. */
export const REPO_PART_RULES =
  "letters, digits, '.', '_', '-', at most 96, starting and ending with a letter, digit or '_', no '--' or '..'";
/** The rules of a revision, as a refusal says them. */
export const REVISION_RULES =
  "a branch, a tag or a commit sha: letters, digits, '.', '_', '/', '-', starting with a letter, digit or '_'; no '..', '//', component starting with '.' or ending with '.lock', no trailing '.' or '/'";

/** An org or user name, or a repo's name, as the Hub admits it (`--` is the Hub cache's separator). */
export function isRepoPart(part: string): boolean {
  return REPO_PART.test(part) && !part.includes("..") && !part.includes("--");
}

/** A repo id (`org/name`) as the Hub admits it: two parts, the name not ending `.git`. */
export function isRepoId(text: string): boolean {
  const [org, name, ...rest] = text.split("/");
  return (
    rest.length === 0 && isRepoPart(org ?? "") && isRepoPart(name ?? "") && !(name ?? "").endsWith(".git")
  );
}

/** A revision by git's ref-name rules (git check-ref-format), in the characters a shell leaves alone. */
export function isRevision(text: string): boolean {
  if (!REVISION_CHARS.test(text) || text.includes("..") || text.endsWith(".")) return false;
  return text.split("/").every((c) => c !== "" && !c.startsWith(".") && !c.endsWith(".lock"));
}

/** Every form a model may be named in; anything else is refused with this list. */
export const ACCEPTED_FORMS = [
  "https://huggingface.co/<org>/<name>",
  "https://huggingface.co/<org>/<name>/tree/<revision>",
  "https://hf.co/<org>/<name>",
  "hf://<org>/<name>[@<revision>]",
  "<org>/<name>[@<revision>]",
];

const modelRef = z
  .object({ org: z.string(), name: z.string(), revision: z.string().refine(isRevision) })
  .refine((r) => isRepoId(`${r.org}/${r.name}`));

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
