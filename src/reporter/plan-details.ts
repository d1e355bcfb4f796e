import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import type { SwapPlan } from "../plan/types.ts";
import { message, type SlackMessage, section, truncate } from "../slack/blocks.ts";
import {
  checkLine,
  clean,
  code,
  commandBlock,
  flagText,
  headCodeBlock,
  origin,
  prose,
  sections,
} from "./plan-text.ts";

const FLAG_BULLETS_MAX_SECTIONS = 3;

/**
 * The plan's workings, in the reply under the plan: every check with its figures, the engine's command
 * and why each flag and variable is set (and where it came from), the notes in full, and the diff of the
 * unit against the one serving now. The plan above says what the approver decides on; this says why.
 */
export function renderPlanDetails(plan: SwapPlan, swapId: string): SlackMessage {
  const blocks = [
    section(
      `*How swap \`${clean(swapId, 100)}\` was planned*: every check, the command and why each flag, the unit diff`,
    ),
    ...sections(["*Checks*", ...plan.checks.map(checkLine)], 3),
    section(`*Command*\n${commandBlock(plan)}`),
  ];
  const why = [
    ...(plan.env ?? []).map(
      (e) => `• ${code(`${e.name}=${e.value}`, 300)}: ${prose(e.reason, 500)}${origin(e)}`,
    ),
    ...plan.flags.map((f) => `• ${code(flagText(f), 300)}: ${prose(f.reason, 500)}${origin(f)}`),
  ];
  blocks.push(...sections(why, FLAG_BULLETS_MAX_SECTIONS));
  if (plan.notes.length > 0)
    blocks.push(
      ...sections(
        plan.notes.map((n) => `_${prose(n, 600)}_`),
        1,
      ),
    );
  if (plan.unitDiff === "") blocks.push(section(`*Unit* ${code(plan.unitName)}: unchanged`));
  else {
    blocks.push(section(`*Unit* ${code(plan.unitName)}: the diff against the unit serving now`));
    blocks.push(section(headCodeBlock(plan.unitDiff.replace(/\n$/, "").split("\n"))));
  }
  const text = `How swap ${escapeMrkdwn(truncate(swapId, 100))} was planned: checks, command, flags, unit diff`;
  return message(text, blocks);
}
