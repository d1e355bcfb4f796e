import { hubPullRequest } from "../grammar/model-ref.ts";
import type { ModelSummary } from "../hub/types.ts";
import type { RecipeSetting } from "./recipes.ts";
import { describeRemoteCode, PLAIN, remoteCodeOrgs } from "./remote-code.ts";
import type { ModelFacts, PlanCheck } from "./types.ts";

/** The engines' flag that lets transformers import the model repo's Python (SGLang and vLLM spell it alike). */
export const TRUST_REMOTE_CODE = "trust-remote-code";

/**
 * Whether the model repo's Python runs (facts.remoteCode, from the repo's files: every config's auto_map
 * and its *.py), and the flag that lets it: only when every org whose code it is (the model's, and any
 * other repo an auto_map names) is trusted in hub.remoteCodeOrgs, never from a Hub pull request (anyone
 * can open one), never when an auto_map names code modelswap cannot read. Undefined: none of it runs.
 */
export function remoteCodeCheck(
  model: ModelSummary,
  facts: ModelFacts,
  allowedOrgs: readonly string[],
): { check: PlanCheck; flag?: RecipeSetting } | undefined {
  const code = facts.remoteCode;
  if (code === undefined && !facts.needsRemoteCode) return undefined;
  const fail = (detail: string, fix: string) => ({ check: { id: "remote-code", ok: false, detail, fix } });
  if (code === undefined) {
    // a swap resolved by an older modelswap, which read config.json's auto_map alone
    return fail(
      "runs Python from the model repo (config.json auto_map), and which files was not read when this swap was resolved",
      "request the swap again: it reads every config of the repo and names the files that would run",
    );
  }
  const what = `runs Python from the model repo: ${describeRemoteCode(code, PLAIN, 400)}`;
  const pullRequest = hubPullRequest(model.revision);
  if (pullRequest !== undefined) {
    return fail(
      `${what}, and this revision is Hub pull request #${pullRequest}: anyone's code`,
      "ask the repo's owner to merge it, then swap to main",
    );
  }
  if (code.unreadable.length + code.moreUnreadable > 0) {
    return fail(
      `${what}: an auto_map entry is not a module.Class (or org/name--module.Class) reference, so modelswap cannot say what would run`,
      "pick another repository, or ask the repo's owner to correct its auto_map",
    );
  }
  if (code.moreOtherRepos > 0) {
    return fail(
      `${what}: its auto_map names code from more than ${code.otherRepos.length} other repos`,
      "pick another repository: no model needs code from that many others",
    );
  }
  const orgs = remoteCodeOrgs(model.repo, code);
  const trusted = (org: string) => allowedOrgs.some((o) => o.toLowerCase() === org.toLowerCase());
  const untrusted = orgs.filter((o) => !trusted(o));
  const list = (names: readonly string[]) =>
    names.length === 1 ? names[0]! : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
  const isAre = (names: readonly string[]) => (names.length === 1 ? "is" : "are");
  if (untrusted.length > 0) {
    const others = code.otherRepos.length > 0 ? ` (and of ${list(code.otherRepos)})` : "";
    return fail(
      `${what}, and ${list(untrusted)} ${isAre(untrusted)} not in hub.remoteCodeOrgs`,
      `read the .py files named here in the repo${others}; if you trust ${list(untrusted)} to run code on the host, an admin adds ${untrusted.length === 1 ? "it" : "them"} to hub.remoteCodeOrgs`,
    );
  }
  const why = `${list(orgs)} ${isAre(orgs)} trusted in hub.remoteCodeOrgs`;
  return {
    check: { id: "remote-code", ok: true, detail: `${what}; ${why}` },
    flag: {
      setting: TRUST_REMOTE_CODE,
      value: undefined,
      reason: `the engine imports the repo's own Python, which it refuses without this flag: ${describeRemoteCode(code, PLAIN, 300)}; ${why}`,
    },
  };
}
