import type { HostFrontDoor } from "../../../src/front-door/host-front-door.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";

/** How often the drain looks at the old unit's requests in flight (HAProxy's `scur`). */
const DRAIN_POLL_MS = 500;

/** Waits until `server` has no request in flight, or until `deadline`; how many are still in flight. */
export async function waitDrained(
  ctx: Pick<StageContext, "clock" | "signal">,
  fd: HostFrontDoor,
  server: string,
  deadline: number,
): Promise<number> {
  const { clock } = ctx;
  let inFlight = await fd.door.sessions(server);
  while (inFlight > 0 && clock.now() < deadline) {
    await clock.sleep(Math.min(DRAIN_POLL_MS, deadline - clock.now()), ctx.signal);
    inFlight = await fd.door.sessions(server);
  }
  return inFlight;
}
