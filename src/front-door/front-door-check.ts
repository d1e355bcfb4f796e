import { asCodedError, type ErrorCode, isHostUnreachable } from "../errors.ts";
import type { PlanCheck } from "../plan/types.ts";
import type { FrontDoorServer } from "./front-door.ts";
import type { HostFrontDoor } from "./host-front-door.ts";

const MISCONFIGURED = "FRONT_DOOR_MISCONFIGURED" as const;

const misconfigured = (detail: string, fix: string): FrontDoorReading => ({
  ok: false,
  code: MISCONFIGURED,
  detail,
  fix,
});

/**
 * The plan's front-door check, read from HAProxy before anything is touched: every slot exists and
 * points where the config says, the slot of the unit serving now (at `livePort`) is the one ready
 * (production goes through it now), and `hold` is not marked down by a health check (HAProxy would skip
 * it and answer 503 at once: no hold). A front door that cannot be read fails the check with its error's
 * fix; an unreachable host is thrown, as any preflight read.
 */
export async function checkFrontDoor(fd: HostFrontDoor, livePort: number): Promise<PlanCheck> {
  const read = await readFrontDoor(fd, livePort);
  if (read.ok) return { id: "front-door", ok: true, detail: read.detail };
  const code = read.code === MISCONFIGURED ? "" : ` (${read.code})`;
  return { id: "front-door", ok: false, detail: `${read.detail}${code}`, fix: read.fix };
}

/** What the front door is, as the plan and the doctor judge it. */
export type FrontDoorReading =
  | { ok: true; detail: string; holdPort: number }
  | { ok: false; detail: string; fix: string; code: ErrorCode | typeof MISCONFIGURED };

/**
 * Reads the slots and judges them; the doctor adds its own look at the hold's port. `livePort` is where
 * modelswap last left the serving unit; without it (the doctor), the live slot is the unit slot that is
 * ready.
 */
export async function readFrontDoor(fd: HostFrontDoor, livePort?: number): Promise<FrontDoorReading> {
  let servers: FrontDoorServer[];
  try {
    servers = await fd.door.servers();
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    const coded = asCodedError(error);
    return { ok: false, detail: coded.message, fix: coded.fix, code: coded.code };
  }
  const names = servers.map((s) => s.name).join(", ") || "none";
  const byName = new Map(servers.map((s) => [s.name, s]));
  const missing = [...fd.slots.map((s) => s.server), fd.hold].find((n) => !byName.has(n));
  if (missing !== undefined)
    return misconfigured(
      `${fd.door.description} has no slot ${missing} (it has ${names})`,
      "name the slots in hosts[].frontDoor as haproxy.cfg does (server and standby: the units' slots, hold: the unchecked slot at a closed port; docs/front-door.md)",
    );
  for (const slot of fd.slots) {
    const seen = byName.get(slot.server)!;
    if (seen.port !== slot.port)
      return misconfigured(
        `slot ${slot.server} points at port ${seen.port}, but its unit listens on port ${slot.port}`,
        `point ${slot.server} at 127.0.0.1:${slot.port} in haproxy.cfg (or set ${slot.server === fd.server ? "servingPort" : "frontDoor.standby.port"} to ${seen.port})`,
      );
  }
  const hold = byName.get(fd.hold)!;
  if (fd.slots.some((s) => s.port === hold.port))
    return misconfigured(
      `slot ${hold.name} points at a unit's port (${hold.port}): it would send held requests to a unit that is still loading`,
      `point ${hold.name} at a port nothing listens on (127.0.0.1:1 in docs/front-door.md)`,
    );
  if (hold.health === "down" && hold.state !== "maint")
    return misconfigured(
      `slot ${hold.name} is marked down by a health check: HAProxy would answer 503 at once instead of holding`,
      `remove \`check\` from the ${hold.name} line of haproxy.cfg (docs/front-door.md) and reload HAProxy`,
    );
  const ready = fd.slots.filter((s) => byName.get(s.server)!.state === "ready");
  const live =
    livePort === undefined ? (ready[0] ?? fd.slots[0]!) : fd.slots.find((s) => s.port === livePort);
  if (live === undefined)
    return misconfigured(
      `the unit serving now listens on port ${livePort}, behind none of the front door's slots (${fd.slots.map((s) => `${s.server} at ${s.port}`).join(", ")})`,
      "point a unit slot at the serving unit's port in haproxy.cfg and hosts[].frontDoor, then swap again",
    );
  const liveServer = byName.get(live.server)!;
  if (liveServer.state !== "ready")
    return misconfigured(
      `slot ${live.server} (the serving unit's, port ${live.port}) is in ${liveServer.state}, not ready: production does not go through it now`,
      `make it ready (echo "set server ${fd.door.backend}/${live.server} state ready" | socat stdio unix-connect:<socket>) once the unit behind it serves, then swap again`,
    );
  const alsoReady = ready.find((s) => s.server !== live.server);
  if (alsoReady !== undefined)
    return misconfigured(
      `slots ${live.server} and ${alsoReady.server} both take requests: a swap would send some of them to the unit it replaces or starts`,
      `put ${alsoReady.server} in maint (echo "set server ${fd.door.backend}/${alsoReady.server} state maint" | socat stdio unix-connect:<socket>), or mark it \`disabled\` in haproxy.cfg`,
    );
  const standby = fd.slots.find((s) => s.server !== live.server);
  return {
    ok: true,
    holdPort: hold.port,
    detail: `${fd.door.description}: ${live.server} serves port ${live.port} (${liveServer.sessions} in flight)${standby === undefined ? "" : `; ${standby.server} (port ${standby.port}) stands by`}; ${hold.name} holds requests up to ${fd.holdSeconds} s`,
  };
}
