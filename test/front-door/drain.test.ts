import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { HaproxyFrontDoor } from "../../src/front-door/haproxy-front-door.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { type BenchHaproxy, startHaproxy } from "../../testbench/haproxy.ts";
import { type StandInServer, startStandIn } from "../../testbench/stand-in-server.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";
import { openStream, send, servedBy } from "./client.ts";

/**
 * What `ready`, `drain` and `maint` do to requests in flight and to new ones, through a real HAProxy 2.6
 * with two stand-in units behind it, and the drain a swap relies on: a stream on the old slot runs to
 * its end while new requests go to the new one, and the old slot's sessions fall to 0.
 */
const local = new LocalTransport({ hostName: "gpu-1", commandTimeoutMs: 10_000 });
let dir: { path: string; remove: () => Promise<void> };
let haproxy: BenchHaproxy;
let blue: StandInServer;
let green: StandInServer;
let door: HaproxyFrontDoor;
let url: string;

beforeAll(async () => {
  dir = await tempDir("modelswap-drain-");
  blue = await startStandIn("blue");
  green = await startStandIn("green");
  haproxy = await startHaproxy(join(dir.path, "haproxy"), {
    servers: [
      { name: "blue", port: blue.port },
      { name: "green", port: green.port, disabled: true },
    ],
  });
  door = new HaproxyFrontDoor(local, { socket: haproxy.socket, backend: haproxy.backend });
  url = `${haproxy.url}/v1/completions`;
});
afterAll(async () => {
  await haproxy?.stop();
  await Promise.all([blue?.close(), green?.close()]);
  await dir?.remove();
});
beforeEach(async () => {
  await door.setState("blue", "ready");
  await door.setState("green", "maint");
});

/** Sends `n` requests one after another (one client, keep-alive) and names who served each. */
async function sendSeveral(n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const answer = await send(url);
    expect(answer.status).toBe(200);
    out.push(servedBy(answer));
  }
  return out;
}

describe("drain through a real HAProxy", () => {
  it("a stream in flight on a drained server runs to its end while new requests go to the other; its sessions fall to 0", async () => {
    expect(await sendSeveral(2)).toEqual(["blue", "blue"]); // the client's kept-alive connection was on blue
    const stream = openStream(url, 20, 100); // 2 s of events
    await stream.first;
    expect(stream.events[0]!.data).toContain('"served_by":"blue"');
    expect(await door.sessions("blue")).toBe(1);

    await door.setState("green", "ready");
    await door.setState("blue", "drain");
    const drainedAt = Date.now();
    expect(await sendSeveral(6)).toEqual(Array(6).fill("green"));
    expect(await door.sessions("blue")).toBe(1); // the stream is still there

    const end = await stream.done;
    expect(end).toEqual({ status: 200, complete: true });
    expect(stream.events).toHaveLength(21);
    expect(stream.events.every((e) => e.data === "[DONE]" || e.data.includes('"served_by":"blue"'))).toBe(
      true,
    );
    expect(stream.events.filter((e) => e.at > drainedAt).length).toBeGreaterThan(5);
    await until(async () => (await door.sessions("blue")) === 0, { what: "blue's sessions to fall to 0" });
    expect(await door.server("blue")).toMatchObject({ state: "drain", sessions: 0 });
  });

  it("ready: both slots ready share new requests (round robin)", async () => {
    await door.setState("green", "ready");
    expect(new Set(await sendSeveral(6))).toEqual(new Set(["blue", "green"]));
  });

  it("maint: no new request reaches the slot, and a stream already on it is not cut", async () => {
    const stream = openStream(url, 10, 100);
    await stream.first;
    await door.setState("green", "ready");
    await door.setState("blue", "maint");
    expect(await sendSeveral(4)).toEqual(Array(4).fill("green"));
    expect(await stream.done).toEqual({ status: 200, complete: true });
    expect(stream.events).toHaveLength(11);
  });

  it("with no slot ready (drain or maint), HAProxy answers 503 at once: it holds nothing by itself", async () => {
    await door.setState("blue", "drain");
    const drained = await send(url);
    await door.setState("blue", "maint");
    const maint = await send(url);
    for (const answer of [drained, maint]) {
      expect(answer.status).toBe(503);
      expect(answer.ms).toBeLessThan(900); // no retry, no turn-around: not held
      expect(answer.body).toContain("front_door_hold_expired");
    }
  });
});
