import { createHash } from "node:crypto";
import type { SwapPlan } from "../plan/types.ts";

/**
 * What an approval is about: the model commit, tp, and the exact unit (flags, paths). Anything else
 * (timings, engine commit before it is known) may change without voiding an approval.
 */
export function planHash(plan: Pick<SwapPlan, "model" | "tp" | "unitName" | "unitText">): string {
  return createHash("sha256")
    .update(JSON.stringify({ sha: plan.model.sha, tp: plan.tp, unit: plan.unitName, text: plan.unitText }))
    .digest("hex")
    .slice(0, 16);
}
