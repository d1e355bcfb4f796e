import type { HostConfig } from "../config/file-schema.ts";
import type { CommandRunner } from "../host/transport.ts";
import { HaproxyFrontDoor } from "./haproxy-front-door.ts";

/** A slot of the front door that a serving unit sits behind, and the port that unit listens on. */
export interface UnitSlot {
  readonly server: string;
  readonly port: number;
}

/**
 * A host's front door as its config names it: the HAProxy backend, its unit slots (`server` at
 * servingPort and, for blue/green, `standby` at a port of its own) and the slot that holds requests
 * (`hold`). Undefined for a host without one.
 */
export interface HostFrontDoor {
  readonly door: HaproxyFrontDoor;
  /** The slot at servingPort. */
  readonly server: string;
  readonly hold: string;
  readonly holdSeconds: number;
  /** Every unit slot: `server` first, then the standby when there is one. */
  readonly slots: readonly UnitSlot[];
  /** The frontend's port on the host's loopback, where clients' requests come in (frontDoor.port). */
  readonly port?: number;
}

export function hostFrontDoor(config: HostConfig, transport: CommandRunner): HostFrontDoor | undefined {
  const fd = config.frontDoor;
  if (fd === undefined) return undefined;
  const door = new HaproxyFrontDoor(transport, {
    socket: fd.socket,
    backend: fd.backend,
    sudo: fd.sudo,
    commandTimeoutMs: Math.min(120_000, config.commandTimeoutSeconds * 1000),
  });
  const slots: UnitSlot[] = [{ server: fd.server, port: config.servingPort }];
  if (fd.standby !== undefined) slots.push({ server: fd.standby.server, port: fd.standby.port });
  return {
    door,
    server: fd.server,
    hold: fd.hold,
    holdSeconds: fd.holdSeconds,
    slots,
    ...(fd.port === undefined ? {} : { port: fd.port }),
  };
}

/** The unit slot whose unit listens on `port`, if any. */
export function slotAt(fd: HostFrontDoor, port: number): UnitSlot | undefined {
  return fd.slots.find((s) => s.port === port);
}

/** The unit slot other than `live`: where a blue/green swap starts the new unit (undefined: only one). */
export function otherSlot(fd: HostFrontDoor, live: UnitSlot): UnitSlot | undefined {
  return fd.slots.find((s) => s.server !== live.server);
}
