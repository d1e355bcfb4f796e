import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFile, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { DEFAULT_ENGINE_REFS, type EngineRefSpec, writeEngineTree } from "./engine-tree.ts";

const run = promisify(execFile);

export interface EngineUpstream {
  /** `file://<dir>/sglang.git`, a real bare repository. */
  url: string;
  /** The bare repository's path. */
  path: string;
  /** ref (branch or tag name) → commit sha. */
  commits: Record<string, string>;
}

/** Committer/author identity and dates: the same content gives the same shas. */
function gitEnv(date: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "SGLang Bot",
    GIT_AUTHOR_EMAIL: "sglang-bot@users.noreply.github.com",
    GIT_COMMITTER_NAME: "SGLang Bot",
    GIT_COMMITTER_EMAIL: "sglang-bot@users.noreply.github.com",
    GIT_AUTHOR_DATE: date,
    GIT_COMMITTER_DATE: date,
  };
}

const GIT_OPTS = ["-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false"];

async function gitRaw(cwd: string, args: string[], date: string): Promise<string> {
  const { stdout } = await run("git", [...GIT_OPTS, ...args], { cwd, env: gitEnv(date), maxBuffer: 1 << 26 });
  return stdout;
}

async function git(cwd: string, args: string[], date = "2025-09-11T08:00:00+00:00"): Promise<string> {
  return (await gitRaw(cwd, args, date)).trim();
}

/** Commit date of the i-th ref: a month apart, from 2025-09-11. */
function refDate(index: number): string {
  const at = new Date(Date.UTC(2025, 8, 11, 8, 0, 0) + index * 30 * 86_400_000);
  return at.toISOString().replace(/\.\d{3}Z$/, "+00:00");
}

function isTag(spec: EngineRefSpec): boolean {
  return !isPull(spec) && (spec.tag ?? /^v\d/.test(spec.ref));
}

/**
 * `refs/pull/N/head`: a pull request, as GitHub publishes every one under refs/pull/ (fetchable by
 * anyone; not a branch). GitHub docs, "Checking out pull requests locally".
 */
function isPull(spec: EngineRefSpec): boolean {
  return spec.ref.startsWith("refs/pull/");
}

/** The local branch a pull request's commit is made on before it is pushed to refs/pull/N/head. */
function localName(spec: EngineRefSpec): string {
  return isPull(spec) ? spec.ref.replace(/^refs\/pull\/(\d+)\/head$/, "pr-$1") : spec.ref;
}

/**
 * Creates the engine upstream: a real bare git repository `<dir>/sglang.git` with a realistic
 * SGLang layout, one commit per ref (in order, each on top of the previous one), branches and
 * annotated tags as given. Default refs: tag `v0.5.2` (no `--fp4-gemm-backend`) and branch `main`
 * (0.5.6.post1). HEAD is `main` when it exists.
 */
export async function createEngineUpstream(
  dir: string,
  refs: readonly EngineRefSpec[] = DEFAULT_ENGINE_REFS,
  tree: { name: string; write: (dir: string, spec: EngineRefSpec) => Promise<void> } = {
    name: "sglang.git",
    write: writeEngineTree,
  },
): Promise<EngineUpstream> {
  const root = resolve(dir);
  const bare = join(root, tree.name);
  const work = join(root, `.work-${randomBytes(4).toString("hex")}`);
  await mkdir(work, { recursive: true });
  await git(root, ["init", "-q", "--bare", bare]);
  await git(work, ["init", "-q", "--initial-branch", "upstream-build"]);
  const commits: Record<string, string> = {};
  try {
    for (const [index, spec] of refs.entries()) {
      const date = refDate(index);
      for (const entry of await readdir(work)) {
        if (entry !== ".git") await rm(join(work, entry), { recursive: true, force: true });
      }
      await tree.write(work, spec);
      await git(work, ["add", "-A"], date);
      await git(
        work,
        ["commit", "-q", "--allow-empty", "-m", spec.message ?? `Bump version to ${spec.version}`],
        date,
      );
      commits[spec.ref] = await git(work, ["rev-parse", "HEAD"], date);
      if (isTag(spec)) await git(work, ["tag", "-a", "-f", "-m", spec.ref, spec.ref], date);
      else await git(work, ["branch", "-f", localName(spec), "HEAD"], date);
    }
    const branches = refs
      .filter((s) => !isTag(s) && !isPull(s))
      .map((s) => `refs/heads/${s.ref}:refs/heads/${s.ref}`);
    const pulls = refs.filter(isPull).map((s) => `refs/heads/${localName(s)}:${s.ref}`);
    const tags = refs.filter(isTag).map((s) => `refs/tags/${s.ref}:refs/tags/${s.ref}`);
    await git(work, ["push", "-q", "-f", bare, ...branches, ...pulls, ...tags]);
    const head = refs.find((s) => s.ref === "main" && !isTag(s)) ?? refs.find((s) => !isTag(s) && !isPull(s));
    if (head) await git(bare, ["symbolic-ref", "HEAD", `refs/heads/${head.ref}`]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { url: `file://${bare}`, path: bare, commits };
}

export interface EnginePatchOptions {
  /** The ref the patch is made against (default `main`). */
  base?: string;
  /** The file it changes (default `README.md`). */
  path?: string;
  /** The line it appends to that file. */
  line?: string;
  /** The commit subject. */
  subject?: string;
}

/**
 * Writes a `git format-patch` patch to `outFile` that applies (`git apply`) on top of `base` of
 * the upstream: by default it adds an "SM120 support" line to README.md. Returns `outFile`.
 */
export async function makeEnginePatch(
  upstreamUrl: string,
  outFile: string,
  options: EnginePatchOptions = {},
): Promise<string> {
  const base = options.base ?? "main";
  const path = options.path ?? "README.md";
  const line = options.line ?? "- NVIDIA: sm_120 (RTX PRO 6000 Blackwell) — SM120 support, local patch";
  const date = "2025-12-10T09:30:00+00:00";
  const work = join(dirname(resolve(outFile)), `.patch-${randomBytes(4).toString("hex")}`);
  await mkdir(dirname(work), { recursive: true });
  try {
    await git(dirname(work), ["clone", "-q", "--branch", base, upstreamUrl, work], date);
    const file = join(work, path);
    await mkdir(dirname(file), { recursive: true });
    const before = await readFile(file, "utf8").catch(() => "");
    if (before !== "" && !before.endsWith("\n")) await appendFile(file, "\n");
    await appendFile(file, `${line}\n`);
    await git(work, ["add", "-A"], date);
    await git(work, ["commit", "-q", "-m", options.subject ?? "Add SM120 support"], date);
    await writeFile(outFile, await gitRaw(work, ["format-patch", "-1", "--stdout", "HEAD"], date));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return outFile;
}
