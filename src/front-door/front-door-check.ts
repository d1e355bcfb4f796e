import { asCodedError, type ErrorCode, isHostUnreachable } from "../errors.ts";
import type { PlanCheck } from "../plan/types.ts";
import type { HostFrontDoor } from "./host-front-door.ts";

const MISCONFIGURED = "FRONT_DOOR_MISCONFIGURED" as const;

const misconfigured = (detail: string, fix: string): FrontDoorReading => ({
  ok: false,
  code: MISCONFIGURED,
  detail,
  fix,
});

/**
 * The plan's front-door check, read from HAProxy before anything is touched: both slots exist, `server`
 * points at the units' servingPort and is ready (production goes through it now), and `hold` is not
 * marked down by a health check (HAProxy would skip it and answer 503 at once: no hold). A front door
 * that cannot be read fails the check with its error's fix; an unreachable host is thrown, as any
 * preflight read.
 */
export async function checkFrontDoor(fd: HostFrontDoor, servingPort: number): Promise<PlanCheck> {
  const read = await readFrontDoor(fd, servingPort);
  if (read.ok) return { id: "front-door", ok: true, detail: read.detail };
  const code = read.code === MISCONFIGURED ? "" : ` (${read.code})`;
  return { id: "front-door", ok: false, detail: `${read.detail}${code}`, fix: read.fix };
}

/** What the front door is, as the plan and the doctor judge it. */
export type FrontDoorReading =
  | { ok: true; detail: string; holdPort: number }
  | { ok: false; detail: string; fix: string; code: ErrorCode | typeof MISCONFIGURED };

/** Reads the slots and judges them; the doctor adds its own look at the hold's port. */
export async function readFrontDoor(fd: HostFrontDoor, servingPort: number): Promise<FrontDoorReading> {
  let servers: Awaited<ReturnType<HostFrontDoor["door"]["servers"]>>;
  try {
    servers = await fd.door.servers();
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    const coded = asCodedError(error);
    return { ok: false, detail: coded.message, fix: coded.fix, code: coded.code };
  }
  const names = servers.map((s) => s.name).join(", ") || "none";
  const server = servers.find((s) => s.name === fd.server);
  const hold = servers.find((s) => s.name === fd.hold);
  if (server === undefined || hold === undefined)
    return misconfigured(
      `${fd.door.description} has no slot ${server === undefined ? fd.server : fd.hold} (it has ${names})`,
      "name the slots in hosts[].frontDoor as haproxy.cfg does (server: the units' slot, hold: the unchecked slot at a closed port; docs/front-door.md)",
    );
  if (server.port !== servingPort)
    return misconfigured(
      `slot ${server.name} points at port ${server.port}, but the units listen on servingPort ${servingPort}`,
      `point ${server.name} at 127.0.0.1:${servingPort} in haproxy.cfg (or set servingPort to ${server.port})`,
    );
  if (hold.port === servingPort)
    return misconfigured(
      `slot ${hold.name} points at the units' port ${servingPort}: it would send held requests to a unit that is still loading`,
      `point ${hold.name} at a port nothing listens on (127.0.0.1:1 in docs/front-door.md)`,
    );
  if (hold.health === "down" && hold.state !== "maint")
    return misconfigured(
      `slot ${hold.name} is marked down by a health check: HAProxy would answer 503 at once instead of holding`,
      `remove \`check\` from the ${hold.name} line of haproxy.cfg (docs/front-door.md) and reload HAProxy`,
    );
  if (server.state !== "ready")
    return misconfigured(
      `slot ${server.name} is in ${server.state}, not ready: production does not go through it now`,
      `make it ready (echo "set server ${fd.door.backend}/${server.name} state ready" | socat stdio unix-connect:<socket>) once the unit behind it serves, then swap again`,
    );
  return {
    ok: true,
    holdPort: hold.port,
    detail: `${fd.door.description}: ${server.name} serves port ${servingPort} (${server.sessions} in flight); ${hold.name} holds requests up to ${fd.holdSeconds} s`,
  };
}
