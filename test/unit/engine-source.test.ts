import { describe, expect, it } from "vitest";
import {
  describeAllowedRefs,
  type EnginePolicy,
  isPullOrForeignRef,
  lsRemoteArgs,
  parseLsRemote,
  resolveEngineSource,
} from "../../src/engine/engine-source.ts";

const UPSTREAM = "https://github.com/sgl-project/sglang.git";
const MAIN = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
const TAG_OBJECT = "0f0e0d0c0b0a09080706050403020100ffeeddcc";
const TAGGED = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";
const PR_HEAD = "9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a";

/** As `git ls-remote --heads --tags` prints it (an annotated tag and the commit it tags), and one pull ref. */
const LISTING = [
  `${MAIN}\trefs/heads/main`,
  `${TAGGED}\trefs/heads/release/0.5`,
  `${TAG_OBJECT}\trefs/tags/v0.5.2`,
  `${TAGGED}\trefs/tags/v0.5.2^{}`,
  `${MAIN}\trefs/tags/nightly`,
  `${PR_HEAD}\trefs/pull/12/head`,
  "",
].join("\n");

const ANY: EnginePolicy = { allowedRefs: { branches: ["*"], tags: ["*"] }, unlistedRefs: "refuse" };
const STRICT: EnginePolicy = { allowedRefs: { branches: ["main"], tags: ["v*"] }, unlistedRefs: "refuse" };

function resolve(ref: string, policy: EnginePolicy = ANY) {
  return resolveEngineSource({
    ref,
    upstream: UPSTREAM,
    remoteRefs: parseLsRemote(LISTING),
    policy,
    buildDirFor: (commit) => `/models/.modelswap/engines/sglang-${commit.slice(0, 12)}-sw-x`,
  });
}

describe("the engine source of --engine-ref", () => {
  it("peels an annotated tag to the commit it tags, and builds it in a directory of its own", () => {
    expect(resolve("v0.5.2")).toEqual({
      ok: true,
      source: {
        upstream: UPSTREAM,
        ref: "v0.5.2",
        kind: "tag",
        fullRef: "refs/tags/v0.5.2",
        commit: TAGGED,
        listed: true,
        buildAfterApproval: false,
        buildDir: "/models/.modelswap/engines/sglang-5e5e5e5e5e5e-sw-x",
      },
    });
  });

  it("resolves short names as git does: a tag before a branch; full names as given", () => {
    expect(resolve("main")).toMatchObject({ ok: true, source: { kind: "branch", commit: MAIN } });
    expect(resolve("nightly")).toMatchObject({
      ok: true,
      source: { kind: "tag", fullRef: "refs/tags/nightly" },
    });
    expect(resolve("refs/heads/release/0.5")).toMatchObject({ ok: true, source: { kind: "branch" } });
  });

  it("refuses a pull request by default, naming what is built and how an admin may allow it", () => {
    const refused = resolve("refs/pull/12/head", STRICT);
    expect(refused).toEqual({
      ok: false,
      problem: `engine ref refs/pull/12/head is pull request #12 to ${UPSTREAM}, anyone's code: modelswap builds only branches main and tags v* of ${UPSTREAM} (engine.allowedRefs)`,
      fix: "ask for it to be merged and name the branch or tag, or an admin sets engine.unlistedRefs: build-after-approval",
    });
    expect(resolve("pull/12/head")).toMatchObject({ ok: false });
  });

  it("builds a pull request only after approval where the admin allows it", () => {
    const allowed = resolve("pull/12/head", { ...STRICT, unlistedRefs: "build-after-approval" });
    expect(allowed).toMatchObject({
      ok: true,
      source: {
        kind: "pull-request",
        pullRequest: 12,
        commit: PR_HEAD,
        listed: false,
        buildAfterApproval: true,
      },
    });
  });

  it("refuses branches and tags the allowlist does not name", () => {
    expect(resolve("release/0.5", STRICT)).toMatchObject({
      ok: false,
      problem: expect.stringContaining("a branch engine.allowedRefs does not list"),
    });
    expect(resolve("nightly", STRICT)).toMatchObject({ ok: false });
    expect(resolve("v0.5.2", STRICT)).toMatchObject({ ok: true });
  });

  it("takes a commit that a listed branch or tag points at; any other commit may be a pull request's", () => {
    expect(resolve(MAIN.slice(0, 7))).toMatchObject({
      ok: true,
      source: { kind: "commit", commit: MAIN, listed: true },
    });
    expect(resolve(PR_HEAD)).toMatchObject({
      ok: false,
      problem: expect.stringContaining(
        "a commit no listed branch or tag points at (it may be a pull request's)",
      ),
    });
    expect(resolve("abcdef1")).toMatchObject({
      ok: false,
      fix: "give the whole 40-character commit, or name a branch or tag",
    });
  });

  it("says what is accepted when the upstream has no such ref", () => {
    expect(resolve("no-such-branch")).toEqual({
      ok: false,
      problem: `engine ref no-such-branch is not a branch, tag or commit of ${UPSTREAM}`,
      fix: `name any branch and any tag the upstream has (git ls-remote --heads --tags ${UPSTREAM} lists them)`,
    });
  });

  it("knows pull requests and foreign refs from their names alone, and lists only what it needs", () => {
    expect(isPullOrForeignRef("refs/pull/3/merge")).toEqual({ pullRequest: 3 });
    expect(isPullOrForeignRef("refs/changes/01/1/1")).toEqual({});
    expect(isPullOrForeignRef("refs/heads/main")).toBeUndefined();
    expect(isPullOrForeignRef("main")).toBeUndefined();
    expect(lsRemoteArgs("main")).toEqual({ options: ["--heads", "--tags"], patterns: [] });
    expect(lsRemoteArgs("pull/3/head")).toEqual({ options: [], patterns: ["refs/pull/3/head"] });
    expect(describeAllowedRefs(STRICT)).toBe("branches main and tags v*");
  });
});
