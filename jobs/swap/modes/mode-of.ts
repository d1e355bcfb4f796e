import type { SwapPlan } from "../../../src/plan/types.ts";
import { blueGreenOf } from "../stages/blue-green.ts";
import { blueGreenMode } from "./blue-green.ts";
import { coldMode } from "./cold.ts";
import type { SwapMode } from "./swap-mode.ts";

/** The swap's mode, from its plan: blue/green where the plan says the new model fits beside the old one. */
export function modeOf(plan: SwapPlan | undefined): SwapMode {
  return blueGreenOf(plan) === undefined ? coldMode : blueGreenMode;
}
