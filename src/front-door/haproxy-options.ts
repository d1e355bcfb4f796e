import { z } from "zod";
import { FRONT_DOOR_NAME, FRONT_DOOR_NAME_RULE, SOCKET_PATH } from "../grammar/front-door-name.ts";
import { SERVER_STATES } from "./front-door.ts";

/** A backend or server name, admitted by the grammar before it can reach the Runtime API. */
export const frontDoorName = z
  .string()
  .regex(FRONT_DOOR_NAME, `a backend or server name: ${FRONT_DOOR_NAME_RULE}`);

/** The Runtime API socket on the host, e.g. /run/haproxy/admin.sock. */
export const socketPath = z
  .string()
  .regex(
    SOCKET_PATH,
    "an absolute path of letters, digits and _ . - (socat reads , : ! and spaces as syntax)",
  )
  .refine((path) => !path.split("/").includes(".."), "an absolute path without ..");

export const serverState = z.enum(SERVER_STATES);

/** An IPv4 or IPv6 address (HAProxy's `set server … addr` takes an address, never a name). */
export const serverAddress = z.union([z.ipv4(), z.ipv6()], { error: "an IPv4 or IPv6 address" });

/** 1–65535: HAProxy 2.6 itself takes `port 99999` and wraps it to 34463. */
export const serverPort = z.number().int().min(1).max(65535);

/** How modelswap reaches one host's HAProxy. */
export const haproxyFrontDoorOptions = z.strictObject({
  /** The `stats socket` of HAProxy's global section (`level admin`). */
  socket: socketPath,
  /** The backend modelswap steers; its servers are the unit slots. */
  backend: frontDoorName,
  /** Run socat through `sudo -n` (when the socket's mode and group do not let the bot's user in). */
  sudo: z.boolean().default(false),
  /** A limit for one Runtime API command, socat's own wait included. */
  commandTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
});

export type HaproxyFrontDoorOptions = z.input<typeof haproxyFrontDoorOptions>;
