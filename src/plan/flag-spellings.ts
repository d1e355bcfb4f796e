import type { EngineKind } from "../engine/engine-kind.ts";
import type { Spelling } from "../engine/engine-setup.ts";
import { engineFor } from "../engine/engines.ts";
import { withRenderedUnit } from "./plan-unit.ts";
import type { FlagChoice, PlanCheck, SwapPlan } from "./types.ts";

export type { Spelling } from "../engine/engine-setup.ts";

/** The spellings of a setting on this engine, current upstream first (a setting not in its table: `--<setting>`). */
export function spellingsOf(setting: string, engine: EngineKind = "sglang"): readonly Spelling[] {
  return engineFor(engine).spellingsOf(setting);
}

/** Current upstream spelling: what the plan uses before the engine build tells otherwise. */
export function defaultSpelling(setting: string, engine: EngineKind = "sglang"): string {
  return spellingsOf(setting, engine)[0]!.flag;
}

/**
 * The options of an argparse `--help` text and their choices (`{a,b,c}` metavars), read from the
 * option lines ("  -h, --help", "  --tp-size TP_SIZE, --tensor-parallel-size TP_SIZE"). Descriptions
 * are not read, so a flag a description merely mentions is not taken for one.
 */
export function parseHelpOptions(helpText: string): Map<string, string[] | undefined> {
  const options = new Map<string, string[] | undefined>();
  for (const line of helpText.split(/\r?\n/)) {
    const match = /^ {1,4}(-{1,2}[A-Za-z0-9].*)$/.exec(line);
    if (match === null) continue;
    const invocation = match[1]!.split(/ {2,}/)[0]!;
    for (const part of invocation.split(", ")) {
      const [flag, metavar] = part.trim().split(/\s+/, 2);
      if (flag === undefined || !/^-{1,2}[A-Za-z0-9][A-Za-z0-9_-]*$/.test(flag)) continue;
      const choices =
        metavar !== undefined && /^\{.*\}$/.test(metavar) ? metavar.slice(1, -1).split(",") : undefined;
      options.set(flag, choices);
    }
  }
  return options;
}

/** Every option an engine's `--help` lists (SGLang's launch_server, vLLM's `serve --help=all`). */
export function parseHelpFlags(helpText: string): Set<string> {
  return new Set(parseHelpOptions(helpText).keys());
}

function settingValue(choice: FlagChoice, engine: EngineKind): string | undefined {
  if (choice.value !== undefined) return choice.value;
  return spellingsOf(choice.setting, engine).find((s) => s.flag === choice.flag)?.impliesValue;
}

/**
 * Spells every flag of the plan the way this engine build does (from its `--help`), re-renders the
 * unit and replaces the "flags" check: it fails naming each setting the engine lacks, or whose value
 * its choices do not include (when `choices` is given, from parseHelpOptions).
 */
export function applyFlagSpellings(
  plan: SwapPlan,
  flags: ReadonlySet<string>,
  choices?: ReadonlyMap<string, readonly string[] | undefined>,
): SwapPlan {
  const missing: string[] = [];
  const refused: string[] = [];
  const engine = plan.engineKind;
  const spelled = plan.flags.map((choice): FlagChoice => {
    const value = settingValue(choice, engine);
    // a positional argument is always there: argparse's help lists it apart from the options
    const spelling = spellingsOf(choice.setting, engine).find(
      (s) =>
        s.positional === true ||
        (flags.has(s.flag) && (s.impliesValue === undefined || s.impliesValue === value)),
    );
    if (spelling === undefined) {
      missing.push(choice.setting);
      return { ...choice, flag: undefined, value };
    }
    const accepted = spelling.impliesValue === undefined ? choices?.get(spelling.flag) : undefined;
    if (accepted !== undefined && value !== undefined && !accepted.includes(value)) {
      refused.push(`${spelling.flag} does not accept ${value} (it takes ${accepted.join(", ")})`);
    }
    return {
      ...choice,
      flag: spelling.flag,
      value: spelling.impliesValue === undefined ? value : undefined,
      ...(spelling.positional === true ? { positional: true } : {}),
    };
  });
  const problems = [...missing.map((s) => `no flag for ${s}`), ...refused];
  const check: PlanCheck =
    problems.length === 0
      ? { id: "flags", ok: true, detail: `this engine build has all ${spelled.length} flags of the plan` }
      : {
          id: "flags",
          ok: false,
          detail: `this engine build lacks what the recipe needs: ${problems.join("; ")}`,
          fix: "build an engine that has it: --engine-ref <newer ref> (upstream main has every flag of the recipes)",
        };
  return withRenderedUnit({
    ...plan,
    flags: spelled,
    checks: [...plan.checks.filter((c) => c.id !== "flags"), check],
  });
}
