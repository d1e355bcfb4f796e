import type { SwapPlan } from "../../../src/plan/types.ts";
import { blueGreenOf } from "../stages/blue-green.ts";
import { blueGreenMode } from "./blue-green.ts";
import { coldMode } from "./cold.ts";
import { inPlaceMode } from "./in-place.ts";
import type { SwapMode } from "./swap-mode.ts";

/**
 * The swap's mode, from its plan: in place where the plan loads a new revision into the running engine,
 * blue/green where the new model fits beside the old one, else cold.
 */
export function modeOf(plan: SwapPlan | undefined): SwapMode {
  if (plan?.clients?.inPlace?.will === true) return inPlaceMode;
  return blueGreenOf(plan) === undefined ? coldMode : blueGreenMode;
}
