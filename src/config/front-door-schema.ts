import { z } from "zod";
import { isSocketPath } from "../grammar/front-door-name.ts";
import { problem } from "../problem-text.ts";
import { frontDoorName } from "./config-grammar.ts";

/**
 * A host's front door (docs/front-door.md): HAProxy in front of the units, steered over its Runtime API.
 * A cold swap drains `server` (the slot at servingPort) while `hold` (a slot at a port nothing listens
 * on) holds new requests, and sends them on once the new unit is healthy and sane.
 */
export const frontDoorSchema = z.strictObject({
  /** The `stats socket` of HAProxy's global section, at `level admin`. */
  socket: z
    .string(
      problem("frontDoor.socket is not set", "use the stats socket's path, e.g. /run/haproxy/admin.sock"),
    )
    .refine(
      isSocketPath,
      problem(
        "frontDoor.socket must be an absolute path of letters, digits and _ . - (socat reads , : ! and spaces as syntax)",
        "use e.g. /run/haproxy/admin.sock",
      ),
    ),
  backend: frontDoorName("backend"),
  /** The slot whose address is the units' servingPort. */
  server: frontDoorName("server"),
  /** The unchecked slot at a closed port that holds requests while no unit can take them. */
  hold: frontDoorName("hold"),
  /**
   * The second unit slot, for blue/green swaps: its name in haproxy.cfg and the port a unit behind it
   * listens on. A swap whose new model fits beside the old one (spare GPUs, or room on the same ones)
   * starts it behind the slot that does not serve now, checks it there, and flips. Absent: every swap
   * is cold.
   */
  standby: z
    .strictObject({
      server: frontDoorName("standby.server"),
      port: z.number().int().min(1).max(65535),
    })
    .optional(),
  /** Run socat through `sudo -n` (when the socket's group does not let the bot's user in). */
  sudo: z.boolean().default(false),
  /**
   * The port HAProxy's frontend listens on, reached from the GPU host at 127.0.0.1 (`bind :8000` or
   * `bind 127.0.0.1:8000`): the last check before a swap's outcome sends its health request and a sanity
   * prompt through it, as a client would. Absent: it asks the unit directly and reads which slot is ready.
   */
  port: z.number().int().min(1).max(65535).optional(),
  /**
   * How long HAProxy holds a request (`retries` × 1 s with `timeout connect 1s`): the plan says when the
   * expected load is longer. modelswap cannot read it from HAProxy; keep it equal to haproxy.cfg's.
   */
  holdSeconds: z.number().int().min(1).max(3600).default(300),
});

export type FrontDoorConfig = z.infer<typeof frontDoorSchema>;
