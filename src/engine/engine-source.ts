import { z } from "zod";
import { type ShellCommand, sh } from "../host/shell-quote.ts";
import type { EngineKind } from "./engine-kind.ts";

/*
 * Which engine source a swap builds, and whether it may. `--engine-ref` names a ref of the configured
 * upstream; the host's `git ls-remote` says what it is. Branches and tags of the upstream are its own
 * (only its maintainers push them); a pull request (`refs/pull/N/head`) is anyone's code, and a commit
 * that no branch or tag points at may be one. Such refs are refused, or, where an admin allows it, built
 * only after an approver has seen the plan say so. The plan (and so the approval) names the commit, and
 * the build checks that the ref still points at it.
 */

export const ENGINE_REF_KINDS = ["branch", "tag", "commit", "pull-request", "other"] as const;
export type EngineRefKind = (typeof ENGINE_REF_KINDS)[number];

export const engineSourceSchema = z.object({
  upstream: z.string(),
  /** As the requester typed it. */
  ref: z.string(),
  kind: z.enum(ENGINE_REF_KINDS),
  /** The upstream's name for it (refs/heads/main, refs/tags/v0.5.2, refs/pull/12/head); none for a bare commit. */
  fullRef: z.string().optional(),
  pullRequest: z.number().int().optional(),
  /** The 40-character commit the ref points at now: what is built, and what the approval is for. */
  commit: z.string(),
  /** engine.allowedRefs lists it. */
  listed: z.boolean(),
  /** Not listed, and engine.unlistedRefs lets it be built only after approval: nothing runs before. */
  buildAfterApproval: z.boolean(),
  /** The directory of this build on the host; the unit imports the engine from it (EngineSetup.importPath). */
  buildDir: z.string(),
  /** vLLM: the build compiles its kernels rather than taking the commit's precompiled ones. */
  compileKernels: z.boolean().optional(),
  /** The build the serving unit runs, of this very commit: reused (checked, not fetched or built again). */
  reused: z.boolean().optional(),
});
export type EngineSource = z.infer<typeof engineSourceSchema>;

export interface EnginePolicy {
  allowedRefs: { branches: readonly string[]; tags: readonly string[] };
  unlistedRefs: "refuse" | "build-after-approval";
}

const PULL = /^(?:refs\/)?pull\/(\d{1,9})\/(head|merge)$/;
const HEX = /^[0-9a-f]{7,40}$/;
const FULL_SHA = /^[0-9a-f]{40}$/;

/** A ref that is a pull request or outside branches and tags, whatever the upstream holds: known from its name alone. */
export function isPullOrForeignRef(ref: string): { pullRequest?: number } | undefined {
  const pull = PULL.exec(ref);
  if (pull !== null) return { pullRequest: Number(pull[1]) };
  if (ref.startsWith("refs/") && !ref.startsWith("refs/heads/") && !ref.startsWith("refs/tags/")) return {};
  return undefined;
}

/**
 * What `git ls-remote <options> <upstream> <patterns>` must list to classify `ref`: every branch and tag,
 * or just the one ref outside them (an upstream like sglang's has tens of thousands of pull refs).
 * Options go before the repository: git takes anything after it for a pattern.
 */
export function lsRemoteArgs(ref: string): { options: string[]; patterns: string[] } {
  const pull = PULL.exec(ref);
  if (pull !== null) return { options: [], patterns: [`refs/pull/${pull[1]}/${pull[2]}`] };
  if (isPullOrForeignRef(ref) !== undefined) return { options: [], patterns: [ref] };
  return { options: ["--heads", "--tags"], patterns: [] };
}

/** The host's `git ls-remote` of `upstream` that lists what `ref` may be (see lsRemoteArgs). */
export function lsRemoteCommand(upstream: string, ref: string): ShellCommand {
  const args = lsRemoteArgs(ref);
  return sh`git ls-remote ${args.options} ${upstream} ${args.patterns}`;
}

/** `git ls-remote` output as ref → commit; an annotated tag's `^{}` line (the commit it tags) wins over the tag object. */
export function parseLsRemote(text: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([0-9a-f]{40})\t(\S+)$/.exec(line.trim());
    if (m === null) continue;
    const [, sha, name] = m as unknown as [string, string, string];
    if (name.endsWith("^{}")) refs.set(name.slice(0, -3), sha);
    else if (!refs.has(name)) refs.set(name, sha);
  }
  return refs;
}

/** Shell-style globs: `*` any run of characters (slashes included), `?` one; the rest literal. */
export function globMatches(pattern: string, text: string): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${re}$`).test(text);
}

/** The allowed refs in words, for a refusal: "branches main and tags v*". */
export function describeAllowedRefs(policy: EnginePolicy): string {
  const list = (one: string, many: string, patterns: readonly string[]) =>
    patterns.length === 0
      ? undefined
      : patterns.includes("*")
        ? `any ${one}`
        : `${many} ${patterns.join(", ")}`;
  const parts = [
    list("branch", "branches", policy.allowedRefs.branches),
    list("tag", "tags", policy.allowedRefs.tags),
  ].filter((p): p is string => p !== undefined);
  return parts.length === 0 ? "no refs" : parts.join(" and ");
}

export type EngineSourceResult =
  | { ok: true; source: EngineSource }
  | { ok: false; problem: string; fix: string };

/**
 * What `ref` is in the upstream, as `git ls-remote` listed it (see lsRemotePatterns), and whether it may
 * be built. Short names resolve as git does: a tag before a branch of the same name.
 */
export function resolveEngineSource(input: {
  ref: string;
  upstream: string;
  remoteRefs: Map<string, string>;
  policy: EnginePolicy;
  buildDirFor: (commit: string) => string;
}): EngineSourceResult {
  const { ref, upstream, remoteRefs, policy } = input;
  const allowed = describeAllowedRefs(policy);
  const isListed = (fullRef: string): boolean => {
    if (fullRef.startsWith("refs/heads/"))
      return policy.allowedRefs.branches.some((p) => globMatches(p, fullRef.slice(11)));
    if (fullRef.startsWith("refs/tags/"))
      return policy.allowedRefs.tags.some((p) => globMatches(p, fullRef.slice(10)));
    return false;
  };
  const done = (
    kind: EngineRefKind,
    commit: string,
    listed: boolean,
    extra: { fullRef?: string; pullRequest?: number },
  ): EngineSourceResult => {
    if (!listed && policy.unlistedRefs === "refuse") {
      return {
        ok: false,
        problem: `engine ref ${ref} is ${describeKind(kind, extra.pullRequest, upstream)}: modelswap builds only ${allowed} of ${upstream} (engine.allowedRefs)`,
        fix:
          kind === "pull-request"
            ? "ask for it to be merged and name the branch or tag, or an admin sets engine.unlistedRefs: build-after-approval"
            : `name ${allowed} with --engine-ref, or an admin lists this ref in engine.allowedRefs`,
      };
    }
    return {
      ok: true,
      source: {
        upstream,
        ref,
        kind,
        ...extra,
        commit,
        listed,
        buildAfterApproval: !listed,
        buildDir: input.buildDirFor(commit),
      },
    };
  };

  const notFound = (): EngineSourceResult => ({
    ok: false,
    problem: `engine ref ${ref} is not a branch, tag or commit of ${upstream}`,
    fix: `name ${allowed} the upstream has (git ls-remote --heads --tags ${upstream} lists them)`,
  });

  const pull = PULL.exec(ref);
  if (pull !== null) {
    const fullRef = `refs/pull/${pull[1]}/${pull[2]}`;
    const commit = remoteRefs.get(fullRef);
    if (commit === undefined) return notFound();
    return done("pull-request", commit, false, { fullRef, pullRequest: Number(pull[1]) });
  }
  if (ref.startsWith("refs/")) {
    const commit = remoteRefs.get(ref);
    if (commit === undefined) return notFound();
    const kind = ref.startsWith("refs/heads/") ? "branch" : ref.startsWith("refs/tags/") ? "tag" : "other";
    return done(kind, commit, isListed(ref), { fullRef: ref });
  }
  for (const fullRef of [`refs/tags/${ref}`, `refs/heads/${ref}`]) {
    const commit = remoteRefs.get(fullRef);
    if (commit !== undefined)
      return done(fullRef.startsWith("refs/tags/") ? "tag" : "branch", commit, isListed(fullRef), {
        fullRef,
      });
  }
  if (HEX.test(ref)) {
    // A commit is the upstream's own when a listed branch or tag points at it; any other may be a pull request's.
    const tip = [...remoteRefs].find(([name, sha]) => sha.startsWith(ref) && isListed(name));
    if (tip !== undefined) return done("commit", tip[1], true, {});
    if (!FULL_SHA.test(ref)) {
      return {
        ok: false,
        problem: `engine ref ${ref} is a short commit that no listed branch or tag of ${upstream} points at`,
        fix: "give the whole 40-character commit, or name a branch or tag",
      };
    }
    return done("commit", ref, false, {});
  }
  return notFound();
}

function describeKind(kind: EngineRefKind, pullRequest: number | undefined, upstream: string): string {
  switch (kind) {
    case "pull-request":
      return `pull request #${pullRequest} to ${upstream}, anyone's code`;
    case "commit":
      return "a commit no listed branch or tag points at (it may be a pull request's)";
    case "other":
      return "outside the upstream's branches and tags";
    case "branch":
      return "a branch engine.allowedRefs does not list";
    case "tag":
      return "a tag engine.allowedRefs does not list";
  }
}

/** The engine source in one line of mrkdwn-free text: "tag v0.5.2 at 1a2b3c4 of https://…/sglang.git". */
export function describeEngineSource(source: EngineSource): string {
  const at = source.commit.slice(0, 7);
  switch (source.kind) {
    case "pull-request":
      return `pull request #${source.pullRequest} (${source.fullRef}) at ${at} of ${source.upstream}`;
    case "commit":
      return `commit ${at} of ${source.upstream}${source.listed ? "" : " (on no listed branch or tag)"}`;
    case "other":
      return `ref ${source.fullRef ?? source.ref} at ${at} of ${source.upstream}`;
    default:
      return `${source.kind} ${source.ref.replace(/^refs\/(heads|tags)\//, "")} at ${at} of ${source.upstream}`;
  }
}

/**
 * Where a swap builds its engine: a directory of its own under the models directory, never the engine
 * source the serving unit runs. Once the swap is over nothing writes there again, so the unit that runs
 * it (and a rollback to that unit) always finds the same code.
 */
export function engineBuildDir(
  modelsDir: string,
  commit: string,
  swapId: string,
  kind: EngineKind = "sglang",
): string {
  return `${modelsDir.replace(/\/+$/, "")}/.modelswap/engines/${kind}-${commit.slice(0, 12)}-${swapId}`;
}

/**
 * The engine build the serving unit runs, from its unit file (the PYTHONPATH modelswap wrote:
 * `<modelsDir>/.modelswap/engines/<kind>-<commit12>-<swap>/…`), when it is one of this engine's builds
 * under this models directory; undefined for a unit that runs the venv's own install.
 */
export function servingBuildOf(
  unitText: string,
  modelsDir: string,
  kind: EngineKind,
): { buildDir: string; commit12: string } | undefined {
  const root = `${modelsDir.replace(/\/+$/, "")}/.modelswap/engines/`;
  for (const line of unitText.split("\n")) {
    const m = /^Environment="?PYTHONPATH=([^"\s]+)"?$/.exec(line.trim());
    if (m === null || !m[1]!.startsWith(root)) continue;
    const name = m[1]!.slice(root.length).split("/")[0]!;
    const parts = /^([a-z]+)-([0-9a-f]{12})-[A-Za-z0-9-]+$/.exec(name);
    if (parts === null || parts[1] !== kind) continue;
    return { buildDir: `${root}${name}`, commit12: parts[2]! };
  }
  return undefined;
}
