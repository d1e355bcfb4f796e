import { describe, expect, it } from "vitest";
import type { FrontDoorServer } from "../../src/front-door/front-door.ts";
import { frontDoorLine } from "../../src/reporter/front-door-line.ts";

const slot = (name: string, state: FrontDoorServer["state"], sessions = 0): FrontDoorServer => ({
  name,
  state,
  health: state === "maint" ? "down" : "unchecked",
  address: "127.0.0.1",
  port: 30000,
  sessions,
  queued: 0,
});

describe("/llm status's front door line", () => {
  it("says what each slot does and what it has in flight", () => {
    expect(
      frontDoorLine(
        "sglang",
        { servers: [slot("blue", "ready", 3), slot("green", "maint"), slot("hold", "maint")] },
        "hold",
      ),
    ).toBe(
      "🚪 *Front door* (HAProxy backend `sglang`): `blue` takes requests (3 in flight) · `green` stopped (no requests) · `hold` idle (holds requests only during a swap)",
    );
  });

  it("warns when no slot takes new requests (a swap cut short by hand, a slot put in maint)", () => {
    expect(
      frontDoorLine("sglang", { servers: [slot("blue", "drain", 1), slot("hold", "maint")] }, "hold"),
    ).toMatch(
      /`blue` drains \(1 in flight\) · `hold` idle \(holds requests only during a swap\) — ⚠️ no unit's slot takes new requests$/,
    );
  });

  it("says the hold slot holds new requests while it takes them, and that no unit's slot does", () => {
    expect(
      frontDoorLine("sglang", { servers: [slot("blue", "maint"), slot("hold", "ready", 2)] }, "hold"),
    ).toMatch(
      /`blue` stopped \(no requests\) · `hold` holds new requests \(2 in flight\) — ⚠️ no unit's slot takes new requests$/,
    );
  });

  it("says why it could not be read, with the code", () => {
    expect(
      frontDoorLine("sglang", {
        error: "HAProxy's Runtime API socket /run/haproxy/admin.sock on gpu-1 does not exist",
        code: "FRONT_DOOR_SOCKET_MISSING",
      }),
    ).toBe(
      "🚪 *Front door* (HAProxy backend `sglang`): could not be read: HAProxy's Runtime API socket /run/haproxy/admin.sock on gpu-1 does not exist (FRONT_DOOR_SOCKET_MISSING)",
    );
  });
});
