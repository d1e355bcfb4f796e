import { ENGINE_KINDS, type EngineKind } from "../engine/engine-kind.ts";
import { ENGINE_REF_RULE, isEngineRef } from "./engine-ref.ts";
import { parseSettingSet, SETTING_RULE, type SettingSet } from "./flag-setting.ts";
import { HOST_NAME } from "./host-name.ts";
import { expandHostSet, HOST_SET_RULE } from "./host-set.ts";
import type { ModelRef } from "./model-ref.ts";
import { parseModelRef } from "./model-ref.ts";
import { optionWord } from "./option-word.ts";

export const SWAP_USAGE =
  "/llm swap <huggingface-url> [--host <host> | --group <group> | --hosts <gpu-[1-8]>] [--tp <n>] [--dry-run] [--engine sglang|vllm] [--engine-ref <git ref>] [--set <flag>=<value>]…";

export interface SwapRequest {
  model: ModelRef;
  host: string | undefined;
  /** `--group`: a rollout over the config group's hosts (src/rollout/). */
  group?: string;
  /** `--hosts`: a rollout over these hosts, expanded (`gpu-[1-8]`). */
  hosts?: string[];
  tp: number | undefined;
  dryRun: boolean;
  /** `--engine-ref`; undefined: the model's profile's, else the host's default (hosts[].engineRef), else main. */
  engineRef?: string;
  /** The engine to serve with; undefined: the profile's, else the host's (hosts[].engine). */
  engine?: EngineKind;
  /** `--set name=value`, repeated: engine settings for this swap (only names swaps.settable allows). */
  sets?: SettingSet[];
}

export type ParseResult = { ok: true; request: SwapRequest } | { ok: false; reason: string };

/**
 * Parses the words after `/llm swap`; an option may be typed `--tp=8` or, through autocorrect, `—tp 8`
 * (src/grammar/option-word.ts). Only the accepted forms pass; everything that reaches a shell later
 * has matched one of the narrow patterns above (and is still quoted by `quote`).
 */
export function parseSwapRequest(args: readonly string[]): ParseResult {
  let model: ModelRef | undefined;
  let host: string | undefined;
  let group: string | undefined;
  let hosts: string[] | undefined;
  let tp: number | undefined;
  let dryRun = false;
  let engineRef: string | undefined;
  let engine: EngineKind | undefined;
  const sets: SettingSet[] = [];
  for (let i = 0; i < args.length; i++) {
    const { name, inline } = optionWord(args[i]!);
    const value = () => inline ?? args[++i];
    switch (name) {
      case "--host": {
        const v = value();
        if (v === undefined || !HOST_NAME.test(v)) return fail("--host needs a host name");
        host = v;
        break;
      }
      case "--group": {
        const v = value();
        if (v === undefined || !HOST_NAME.test(v))
          return fail("--group needs a group name from the config (groups:)");
        group = v;
        break;
      }
      case "--hosts": {
        const v = value();
        if (v === undefined) return fail(`--hosts needs ${HOST_SET_RULE}`);
        const expanded = expandHostSet(v);
        if (!expanded.ok) return fail(`--hosts: ${expanded.reason}; use ${HOST_SET_RULE}`);
        hosts = expanded.hosts;
        break;
      }
      case "--tp": {
        const v = value();
        if (v === undefined || !/^[1-9][0-9]?$/.test(v)) return fail("--tp needs a number of GPUs (1–99)");
        tp = Number(v);
        break;
      }
      case "--dry-run":
        if (inline !== undefined) return fail("--dry-run takes no value");
        dryRun = true;
        break;
      case "--engine-ref": {
        const v = value();
        if (v === undefined || !isEngineRef(v)) return fail(`--engine-ref needs ${ENGINE_REF_RULE}`);
        engineRef = v;
        break;
      }
      case "--set": {
        const v = value();
        const set = v === undefined ? undefined : parseSettingSet(v);
        if (set === undefined) return fail(`--set needs ${SETTING_RULE}`);
        if (sets.some((s) => s.setting === set.setting)) return fail(`--set ${set.setting} is given twice`);
        if (sets.length >= 16) return fail("--set may be given at most 16 times");
        sets.push(set);
        break;
      }
      case "--engine": {
        const v = value();
        const kind = ENGINE_KINDS.find((k) => k === v?.toLowerCase());
        if (kind === undefined) return fail(`--engine needs one of ${ENGINE_KINDS.join(", ")}`);
        engine = kind;
        break;
      }
      default: {
        if (name.startsWith("-")) return fail(`unknown option ${name}`);
        if (model !== undefined) return fail("name one model only");
        const parsed = parseModelRef(name);
        if (parsed === undefined) return fail("that is not a Hugging Face model reference");
        model = parsed;
      }
    }
  }
  if (model === undefined) return fail("name the model to swap to");
  if ([host, group, hosts].filter((x) => x !== undefined).length > 1)
    return fail("give one of --host, --group and --hosts");
  if (dryRun && (group !== undefined || hosts !== undefined))
    return fail(
      "--dry-run plans one host: give --host (a rollout's plan is shown for approval before anything changes)",
    );
  return {
    ok: true,
    request: {
      model,
      host,
      ...(group === undefined ? {} : { group }),
      ...(hosts === undefined ? {} : { hosts }),
      tp,
      dryRun,
      ...(engineRef === undefined ? {} : { engineRef }),
      ...(engine === undefined ? {} : { engine }),
      ...(sets.length === 0 ? {} : { sets }),
    },
  };
}

function fail(reason: string): ParseResult {
  return { ok: false, reason };
}
