import type { SwapPlan } from "../plan/types.ts";
import type { ServingState } from "./host-serving.ts";
import type { SwapRecord } from "./swap-record.ts";

/*
 * Which port each of a swap's units listens on. A host's units listen on its servingPort until a
 * blue/green swap starts one behind the front door's standby slot (hosts[].frontDoor.standby.port);
 * from then on the serving unit's port is what the ledger says (ServingState.port).
 */

/** The new unit's port: the plan's `--port` (every plan has one). */
export function newUnitPort(plan: Pick<SwapPlan, "flags">, fallback: number): number {
  const value = Number(plan.flags.find((f) => f.setting === "port")?.value);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

/** The port of the unit the swap replaces (and a rollback goes back to). */
export function oldUnitPort(record: Pick<SwapRecord, "previous">, servingPort: number): number {
  return record.previous?.port ?? servingPort;
}

/** The port the serving unit listens on, as the ledger has it (absent: the host's servingPort). */
export function servingPortOf(serving: Pick<ServingState, "port"> | undefined, servingPort: number): number {
  return serving?.port ?? servingPort;
}
