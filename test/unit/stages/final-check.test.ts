import { describe, expect, it } from "vitest";
import { type Expected, finalCheck } from "../../../jobs/swap/stages/final-check.ts";
import { sglangEngine } from "../../../src/engine/sglang/sglang-engine.ts";
import type { HostFrontDoor } from "../../../src/front-door/host-front-door.ts";
import { commandTimeout } from "../../../src/host/transport.ts";
import type { Fake } from "./fake-stage-context.ts";
import { lateContext, NEW_UNIT, nanAnswer, saneAnswer, withFrontDoor } from "./late-stage-fixtures.ts";

/**
 * The last check before an outcome (jobs/swap/stages/final-check.ts), against a host scripted in the real
 * formats (systemctl show's KEY=value lines, curl's status, SGLang's /generate): each way a unit can
 * fail to serve as a client sees it is found and said; what passes says what it saw.
 */
const NEW: Expected = { unit: NEW_UNIT, port: 30001, engine: sglangEngine, mainPid: 222, slot: "green" };
const DOOR_PORT = 8000;

/** The host as systemd and curl answer: the unit's state and process, then each health probe's status. */
function host(fake: Fake, show: { state?: string; pid?: number }, direct: string, door: string): void {
  fake.host.on(/---direct---/, {
    stdout: `ActiveState=${show.state ?? "active"}\nSubState=running\nMainPID=${show.pid ?? 222}\n---direct---\n${direct}\n---door---\n${door}\n`,
  });
  fake.host.on(/\/generate/, saneAnswer);
}

/** A front door on port 8000 whose ready slot is `ready`. */
function frontDoor(fake: Fake, ready: string): void {
  withFrontDoor(fake, {
    async servers() {
      return ["blue", "green", "hold"].map((name) => ({
        name,
        state: name === ready ? ("ready" as const) : ("maint" as const),
        health: "up" as const,
        address: "127.0.0.1",
        port: 30000,
        sessions: 0,
        queued: 0,
      }));
    },
  });
  (fake.ctx.host.frontDoor as { port?: number }).port = DOOR_PORT;
}

describe("the final check", () => {
  it("passes a unit that serves as clients see it, and says what it saw", async () => {
    const fake = lateContext();
    host(fake, {}, "200", "200");
    frontDoor(fake, "green");
    const seen = await finalCheck(fake.ctx, NEW);
    expect(seen).toMatchObject({ ok: true, unit: NEW_UNIT, mainPid: 222 });
    expect(seen.detail).toBe(
      `\`${NEW_UNIT}\` active (MainPID 222); /health_generate and a sanity prompt answered through the front door (port 8000), \`green\` the front door's ready slot`,
    );
    // the sanity prompt went where a client's request goes: the front door's port, not the unit's
    expect(fake.host.ran(/\/generate$/)).toEqual([
      expect.stringContaining(`127.0.0.1:${DOOR_PORT}/generate`),
    ]);
  });

  it("finds a unit that does not answer behind a front door that holds the probe, and never takes that for a host that is away", async () => {
    // Found by the fault campaign (seed 689774134, path 148): the new unit crash-looped behind the front
    // door; its port took the probe and never answered, HAProxy held the other while no slot was ready, so
    // the command outlived the host's command limit (30 s by default, 10 s on the bench) and the swap took
    // its host for away, retrying instead of rolling back.
    const fake = lateContext();
    fake.host.on(/---direct---/, (_command, options) => {
      // the transport's limit: the command's own, else the host's commandTimeoutSeconds (30 s by default);
      // each probe takes its whole 20 s here, so the command runs 40 s and a bit
      const limitMs = options?.timeoutMs ?? 30_000;
      if (limitMs < 41_000) return commandTimeout("gpu-1", limitMs);
      return {
        stdout: "ActiveState=active\nSubState=running\nMainPID=222\n---direct---\n000\n---door---\n000\n",
      };
    });
    frontDoor(fake, "none");
    const seen = await finalCheck(fake.ctx, NEW);
    expect(seen.ok).toBe(false);
    expect(seen.detail).toContain("/health_generate on port 30001 answered nothing");
    expect(seen.detail).toContain("/health_generate through the front door (port 8000) answered nothing");
  });

  it("fails a unit that crashed and was restarted since it was checked, even though it answers again", async () => {
    const fake = lateContext();
    host(fake, { pid: 999 }, "200", "200");
    frontDoor(fake, "green");
    const seen = await finalCheck(fake.ctx, NEW);
    expect(seen.ok).toBe(false);
    expect(seen.detail).toBe(
      `\`${NEW_UNIT}\` restarted since it was checked (MainPID 999, was 222): it crashed`,
    );
  });

  it("fails a unit behind a front door that sends requests elsewhere, and one it cannot reach", async () => {
    const fake = lateContext();
    host(fake, {}, "200", "503");
    frontDoor(fake, "blue");
    const seen = await finalCheck(fake.ctx, NEW);
    expect(seen.ok).toBe(false);
    expect(seen.detail).toBe(
      "/health_generate through the front door (port 8000) answered HTTP 503; the front door's ready slot is `blue`, not `green`",
    );
  });

  it("fails a stopped unit, naming its state", async () => {
    const fake = lateContext();
    host(fake, { state: "failed", pid: 0 }, "000", "000");
    const seen = await finalCheck(fake.ctx, { ...NEW, slot: undefined });
    expect(seen.ok).toBe(false);
    expect(seen.detail).toBe(
      `\`${NEW_UNIT}\` is not active (failed, running); /health_generate on port 30001 answered nothing`,
    );
  });

  it("fails a healthy unit whose answer through the front door is NaN", async () => {
    const fake = lateContext();
    host(fake, {}, "200", "200");
    fake.host.on(/\/generate$/, nanAnswer);
    frontDoor(fake, "green");
    const seen = await finalCheck(fake.ctx, NEW);
    expect(seen.ok).toBe(false);
    expect(seen.detail).toMatch(/^a sanity prompt through the front door \(port 8000\): 1\/1 prompts failed/);
  });

  it("direct: asks only the unit on its own port (one the front door does not send requests to yet)", async () => {
    const fake = lateContext();
    host(fake, {}, "200", "");
    frontDoor(fake, "blue");
    const seen = await finalCheck(fake.ctx, { ...NEW, slot: undefined }, { direct: true });
    expect(seen.ok).toBe(true);
    expect(seen.detail).toMatch(/answered on port 30001$/);
    expect(fake.host.ran(/\/generate$/)).toEqual([expect.stringContaining("127.0.0.1:30001/generate")]);
    expect((fake.ctx.host.frontDoor as HostFrontDoor).port).toBe(DOOR_PORT);
  });
});
