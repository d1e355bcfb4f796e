import { hostEngine } from "../src/config/host-engines.ts";
import type { Config } from "../src/config/load-config.ts";
import { describeAllowedRefs, isPullOrForeignRef } from "../src/engine/engine-source.ts";
import { escapeMrkdwn } from "../src/escape-mrkdwn.ts";
import { settingValueProblem } from "../src/grammar/flag-setting.ts";
import { ACCEPTED_FORMS, hubPullRequest, hubPullRequestRefusal } from "../src/grammar/model-ref.ts";
import { newSwapId } from "../src/grammar/swap-id.ts";
import { parseSwapRequest, SWAP_USAGE, type SwapRequest } from "../src/grammar/swap-request.ts";
import { reservedSetting } from "../src/plan/catalogue-schema.ts";
import { queueSwap } from "../src/queue/queue-swap.ts";
import { accepted, busy, failure, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";
import { newStages, type SwapRecord } from "../src/swap/swap-record.ts";
import { knownHosts, knownHostsLine, refuseUnknownHost } from "./host-arg.ts";
import { startRollout } from "./start-rollout.ts";
import { takeHost } from "./take-host.ts";

const FORMS = ACCEPTED_FORMS.map((f) => `• \`${escapeMrkdwn(f)}\``).join("\n");

/** `/llm swap <hf-url> [--host H] [--tp N] [--dry-run] [--engine-ref REF] [--set k=v]…`: validate, lock the host, enqueue. */
export const swapCommand: SubCommand = {
  name: "swap",
  usage: SWAP_USAGE,
  summary: "swap the model a host serves (plan → approval → switch → checks, rolled back on failure)",
  async handle(request, { config, access, store, swaps, reports }) {
    if (!(await access.isRequester(request.user))) {
      return refusal(
        "Only requesters may start swaps. Ask an admin to add you to the requesters in the config.",
      );
    }
    const parsed = parseSwapRequest(request.args);
    if (!parsed.ok) {
      return reply(
        `Cannot swap: ${parsed.reason}.\nUsage: \`${escapeMrkdwn(SWAP_USAGE)}\`\nAccepted model forms:\n${FORMS}`,
      );
    }
    const { request: swap } = parsed;
    const source = refuseSource(swap, config.file) ?? refuseSets(swap, config.file.swaps.settable);
    if (source !== undefined) return reply(source);
    if (swap.group !== undefined || swap.hosts !== undefined)
      return await startRollout(request, swap, { config, store, swaps, reports });
    const known = knownHosts(config);
    const host = swap.host ?? (known.length === 1 ? known[0] : undefined);
    if (host === undefined)
      return reply(`Which host? Add \`--host ${escapeMrkdwn("<host>")}\`. ${knownHostsLine(known)}`);
    const unknown = refuseUnknownHost(host, known);
    if (unknown !== undefined) return reply(unknown);
    const hostConfig = config.file.hosts.find((h) => h.name === host);
    const engine = hostConfig === undefined ? undefined : hostEngine(hostConfig, swap.engine);
    if (engine !== undefined && !engine.ok)
      return reply(`Cannot swap: ${escapeMrkdwn(engine.problem)}. ${escapeMrkdwn(engine.fix)}.`);

    const id = newSwapId();
    let note: string | undefined;
    if (!swap.dryRun) {
      const taken = await takeHost(host, id, { store, swaps });
      if (!taken.ok) return "error" in taken ? failure(taken.error) : busy(taken.busy);
      note = taken.note;
    }
    const { group: _group, hosts: _hosts, ...asked } = swap;
    const record: SwapRecord = {
      id,
      host,
      requester: request.user,
      channel: config.file.slack.channel,
      createdAt: new Date().toISOString(),
      request: asked,
      step: "resolve",
      stages: newStages(),
      tasks: {},
    };
    const model = `${swap.model.repo}${swap.model.revision === "main" ? "" : `@${swap.model.revision}`}`;
    try {
      await queueSwap(
        record,
        `${swap.dryRun ? "dry run of " : ""}${model}${requestFlags(swap)}`,
        { store, swaps, reports },
        !swap.dryRun,
      );
    } catch (error) {
      return failure(error);
    }
    return accepted(
      `${swap.dryRun ? "📝 Planning (dry run)" : "🔄 Swap queued"}: \`${model}\` → *${host}* (swap \`${id}\`). Follow its card in <#${config.file.slack.channel}>.${note === undefined ? "" : `\n${note}`}`,
      id,
    );
  },
};

/**
 * Sources that are anyone's code, known from the request alone: a Hub pull-request revision, and an
 * engine pull request or a ref outside the upstream's branches and tags. Refused before anything is
 * queued unless the config allows them (then the plan says so in its first lines). Refs that only the
 * upstream can classify (an unlisted branch, a commit no listed ref points at) are refused in preflight.
 */
function refuseSource(swap: SwapRequest, file: Config["file"]): string | undefined {
  const pullRequest = hubPullRequest(swap.model.revision);
  if (pullRequest !== undefined && !file.hub.allowPullRequests) {
    return `✋ Cannot swap: ${escapeMrkdwn(hubPullRequestRefusal(swap.model.repo, pullRequest))}.`;
  }
  const foreign = swap.engineRef === undefined ? undefined : isPullOrForeignRef(swap.engineRef);
  if (foreign !== undefined && file.engine.unlistedRefs === "refuse") {
    const what =
      foreign.pullRequest !== undefined
        ? `is pull request #${foreign.pullRequest} to the engine upstream, anyone's code`
        : "is outside the engine upstream's branches and tags";
    return `✋ Cannot swap: \`--engine-ref ${escapeMrkdwn(swap.engineRef ?? "")}\` ${what}. modelswap builds only ${escapeMrkdwn(describeAllowedRefs(file.engine))} (engine.allowedRefs); an admin may set engine.unlistedRefs: build-after-approval to build such refs after an approval.`;
  }
  return undefined;
}

/**
 * `--set` names the config does not let a swap set (swaps.settable), or that nobody may set (the plan's
 * own, trust-remote-code: reservedSetting): refused before anything is queued, with what is allowed.
 */
function refuseSets(swap: SwapRequest, settable: readonly string[]): string | undefined {
  for (const set of swap.sets ?? []) {
    const reserved = reservedSetting(set.setting);
    if (reserved !== undefined)
      return `✋ Cannot swap: \`--set ${escapeMrkdwn(set.setting)}\`: ${escapeMrkdwn(reserved)}. Nothing was queued.`;
    const bad = settingValueProblem(set.setting, set.value);
    if (bad !== undefined)
      return `✋ Cannot swap: \`--set ${escapeMrkdwn(set.setting)}\`: ${escapeMrkdwn(bad)}. Nothing was queued.`;
    if (!settable.includes(set.setting)) {
      const allowed =
        settable.length === 0
          ? "no setting may be given with --set here (swaps.settable is empty)"
          : `a swap may set ${settable.map((s) => `\`${escapeMrkdwn(s)}\``).join(", ")} (swaps.settable)`;
      return `✋ Cannot swap: \`--set ${escapeMrkdwn(set.setting)}\` is not a setting a swap may set: ${allowed}; an admin adds names to swaps.settable, or sets it for every swap of the model in its profile (models[].flags). Nothing was queued.`;
    }
  }
  return undefined;
}

/** The options that shape a swap, for the audit stream: ` --tp 8 --engine vllm --engine-ref v0.18.0`. */
function requestFlags(swap: SwapRequest): string {
  const flags: string[] = [];
  if (swap.tp !== undefined) flags.push(`--tp ${swap.tp}`);
  if (swap.engine !== undefined) flags.push(`--engine ${swap.engine}`);
  if (swap.engineRef !== undefined) flags.push(`--engine-ref ${swap.engineRef}`);
  for (const set of swap.sets ?? [])
    flags.push(`--set ${set.setting}${set.value === undefined ? "" : `=${set.value}`}`);
  return flags.length === 0 ? "" : ` ${flags.join(" ")}`;
}
