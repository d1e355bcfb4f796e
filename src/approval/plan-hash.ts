import { createHash } from "node:crypto";
import type { SwapPlan } from "../plan/types.ts";

/**
 * What an approval is about: the model commit, tp, the exact unit (flags, paths), and how clients see
 * the swap (cold or blue/green, on which GPUs, when the benchmark runs, which front-door slots, the unit
 * of a restart at full memory), as the plan's *Clients* line shows it. Anything else (timings, engine
 * commit before it is known) may change without voiding an approval.
 */
export function planHash(plan: Pick<SwapPlan, "model" | "tp" | "unitName" | "unitText" | "clients">): string {
  const c = plan.clients;
  const clients =
    c === undefined
      ? undefined
      : {
          mode: c.mode,
          slots:
            c.frontDoor === undefined ? undefined : [c.frontDoor.from, c.frontDoor.server, c.frontDoor.hold],
          gpus: c.blueGreen?.gpus,
          benchmark: c.blueGreen?.benchmark,
          restart: c.blueGreen?.restart?.unitText,
        };
  return createHash("sha256")
    .update(
      JSON.stringify({
        sha: plan.model.sha,
        tp: plan.tp,
        unit: plan.unitName,
        text: plan.unitText,
        ...(clients === undefined ? {} : { clients }),
      }),
    )
    .digest("hex")
    .slice(0, 16);
}
