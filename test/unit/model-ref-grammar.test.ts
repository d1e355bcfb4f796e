import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { fileSchema } from "../../src/config/file-schema.ts";
import { CodedError } from "../../src/errors.ts";
import { parseModelRef } from "../../src/grammar/model-ref.ts";
import { HubClient } from "../../src/hub/hub-client.ts";
import { type SimHub, startSimHub } from "../../testbench/hub/index.ts";

/**
 * One model-ref grammar: what `/llm swap` admits is what the Hub client sends and what the config takes
 * as a Hub org, by the Hub's own rules (huggingface_hub's validate_repo_id: letters, digits, `.`, `_`,
 * `-`, starting and ending with a letter, digit or `_`, at most 96, no `--` or `..`, no name ending
 * `.git`) and git's for revisions (git check-ref-format: no `..`, no component starting with `.` or
 * ending with `.lock`, no trailing `.` or `/`, no `//`). The parser and the client used to disagree:
 * the parser took `a..b` and `name.`, the client `main.lock`.
 */
const ADMITTED: [repo: string, revision: string][] = [
  ["nvidia/Qwen3.5-397B-A17B-NVFP4", "main"],
  ["Qwen/Qwen3-8B", "v1.1"],
  ["Qwen/Qwen3-8B", "refs/pr/4"],
  ["meta-llama/Llama-3.2-1B-Instruct", "43da92d546abdfe33cded301c28224a774a893b9"],
  ["_org/a.b_c-d", "release/2026-01"],
  ["org.git/name", "v1.locked"],
  ["o/n", "_"],
  [`org/${"x".repeat(96)}`, "main"],
];

const REFUSED: [repo: string, revision: string, why: string][] = [
  ["Qwen/a..b", "main", "`..` in a repo name"],
  ["Qwen/..", "main", "`..` as a repo name"],
  ["Qwen/Qwen3.", "main", "a repo name ending `.`"],
  ["Qwen./Qwen3", "main", "an org ending `.`"],
  ["Qwen/Qwen3-", "main", "a repo name ending `-`"],
  ["Qwen/.Qwen3", "main", "a repo name starting `.`"],
  ["-Qwen/Qwen3", "main", "an org starting `-`"],
  ["Qwen/a--b", "main", "`--` (the Hub's cache separator)"],
  ["Qwen/model.git", "main", "a repo name ending `.git`"],
  [`org/${"x".repeat(97)}`, "main", "a repo name of 97 characters"],
  ["Qwen/Qwen3-8B", "main.lock", "a revision ending `.lock`"],
  ["Qwen/Qwen3-8B", "release/v1.lock", "a revision's component ending `.lock`"],
  ["Qwen/Qwen3-8B", "main..evil", "`..` in a revision"],
  ["Qwen/Qwen3-8B", "v1.", "a revision ending `.`"],
  ["Qwen/Qwen3-8B", "main/", "a revision ending `/`"],
  ["Qwen/Qwen3-8B", "a//b", "`//` in a revision"],
  ["Qwen/Qwen3-8B", "release/.hidden", "a revision's component starting `.`"],
  ["Qwen/Qwen3-8B", "-rf", "a revision starting `-`"],
];

let gone: SimHub;
/** A Hub that is not there: a ref the client admits fails as unavailable, one it refuses never asks. */
let client: HubClient;

beforeAll(async () => {
  gone = await startSimHub();
  await gone.stop();
  client = new HubClient({ endpoint: gone.url, retryDelaysMs: [] });
});

async function clientCode(repo: string, revision: string): Promise<string> {
  const error = await client.resolve({ repo, revision }).then(
    () => "resolved",
    (e: unknown) => e,
  );
  return error instanceof CodedError ? error.code : String(error);
}

function configTakesOrg(org: string): boolean {
  const base = parseYaml(`
slack: { channel: C0SWAPS01 }
requesters: { users: [U0ALICE01] }
approvers: { users: [U0BOB0001] }
hosts:
  - { name: box, local: true, modelsDir: /srv/models, engineSourceDir: /opt/sglang, venv: /opt/sglang/.venv, currentUnit: sglang-kimi.service }
`);
  return fileSchema.safeParse({ ...base, hub: { remoteCodeOrgs: [org] } }).success;
}

describe("one model-ref grammar for the command parser, the Hub client and the config", () => {
  it.each(ADMITTED)("admits %s @ %s", async (repo, revision) => {
    expect(parseModelRef(`${repo}@${revision}`)).toEqual({ repo, revision });
    expect(parseModelRef(`https://huggingface.co/${repo}/tree/${revision}`)).toEqual({ repo, revision });
    // past the client's check: it asked the Hub, which is not there
    expect(await clientCode(repo, revision)).toBe("HUB_UNAVAILABLE");
    expect(configTakesOrg(repo.split("/")[0]!)).toBe(true);
  });

  it.each(REFUSED)("refuses %s @ %s: %s", async (repo, revision) => {
    expect(parseModelRef(`${repo}@${revision}`)).toBeUndefined();
    expect(await clientCode(repo, revision)).toBe("INPUT_INVALID");
  });

  it("takes as a hub.remoteCodeOrgs entry exactly what it takes as an org", () => {
    for (const org of ["moonshotai", "_org", "org.git", "a.b-c_d"]) expect(configTakesOrg(org)).toBe(true);
    for (const org of ["a..b", "org.", "org-", ".org", "-org", "a--b", "a/b", "x".repeat(97)])
      expect(configTakesOrg(org), org).toBe(false);
  });
});
