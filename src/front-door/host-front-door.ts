import type { HostConfig } from "../config/file-schema.ts";
import type { HostTransport } from "../host/transport.ts";
import { HaproxyFrontDoor } from "./haproxy-front-door.ts";

/**
 * A host's front door as its config names it: the HAProxy backend, the slot the units serve behind
 * (`server`, at servingPort) and the slot that holds requests (`hold`). Undefined for a host without one.
 */
export interface HostFrontDoor {
  readonly door: HaproxyFrontDoor;
  readonly server: string;
  readonly hold: string;
  readonly holdSeconds: number;
}

export function hostFrontDoor(config: HostConfig, transport: HostTransport): HostFrontDoor | undefined {
  const fd = config.frontDoor;
  if (fd === undefined) return undefined;
  const door = new HaproxyFrontDoor(transport, {
    socket: fd.socket,
    backend: fd.backend,
    sudo: fd.sudo,
    commandTimeoutMs: Math.min(120_000, config.commandTimeoutSeconds * 1000),
  });
  return { door, server: fd.server, hold: fd.hold, holdSeconds: fd.holdSeconds };
}
