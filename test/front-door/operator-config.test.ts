import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HaproxyFrontDoor } from "../../src/front-door/haproxy-front-door.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { freePort } from "../../testbench/free-port.ts";
import { DEV_PATHS, HAPROXY_BINARY, HOLD_EXPIRED_RESPONSE } from "../../testbench/haproxy.ts";
import { type StandInServer, startStandIn } from "../../testbench/stand-in-server.ts";
import { waitForPort } from "../../testbench/wait-for-port.ts";
import { tempDir } from "../support/tmp.ts";
import { send, servedBy } from "./client.ts";

/**
 * The configuration docs/front-door.md gives operators is the one that holds: its blocks are read from
 * the page and run on a real HAProxy (only the socket and error file paths, the ports, and the global
 * lines a test cannot have — chroot, user, group, daemon, syslog — are changed), and a request held by
 * its `hold` slot on 127.0.0.1:1 is sent to `green` once it is readied.
 */
const doc = readFileSync(new URL("../../docs/front-door.md", import.meta.url), "utf8");
const blocks = [...doc.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], text: m[2]! }));
const config = blocks.find((b) => b.lang === "haproxy")!.text;
const errorResponse = blocks.find((b) => b.text.startsWith("HTTP/1.1 503"))!.text;

const local = new LocalTransport({ hostName: "gpu-1", commandTimeoutMs: 10_000 });
let dir: { path: string; remove: () => Promise<void> };
let child: ChildProcess;
let port: number;
let socket: string;
let blue: StandInServer;
let green: StandInServer;

beforeAll(async () => {
  dir = await tempDir("modelswap-operator-config-");
  blue = await startStandIn("blue");
  green = await startStandIn("green");
  port = await freePort();
  socket = join(dir.path, "admin.sock");
  const errorFile = join(dir.path, "modelswap-503.http");
  await writeFile(errorFile, `${errorResponse.trimEnd().split("\n").join("\r\n")}\r\n`);
  const ours = config
    .split("\n")
    .filter((line) => !/^\s+(log \/dev\/log|chroot|user|group|daemon)\b/.test(line))
    .join("\n")
    .replace("/run/haproxy/admin.sock", socket)
    .replace(" group modelswap", "")
    .replace("/etc/haproxy/errors/modelswap-503.http", errorFile)
    .replace("bind :8000", `bind 127.0.0.1:${port}`)
    .replace("127.0.0.1:30000", `127.0.0.1:${blue.port}`)
    .replace("127.0.0.1:30001", `127.0.0.1:${green.port}`);
  const path = join(dir.path, "haproxy.cfg");
  await writeFile(path, ours);
  child = spawn(HAPROXY_BINARY, ["-db", "-f", path], { stdio: "ignore" });
  await waitForPort(port, "haproxy with the operator's configuration");
});
afterAll(async () => {
  if (child !== undefined && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  await Promise.all([blue?.close(), green?.close()]);
  await dir?.remove();
});

describe("the operator's configuration from docs/front-door.md", () => {
  it("has the bench's settings: the hold, the redispatch, the 503 body", () => {
    for (const setting of [
      "timeout connect 1s",
      "retries 300",
      "retry-on conn-failure",
      "option redispatch 1",
    ])
      expect(config).toContain(setting);
    expect(config).toMatch(/server hold {2}127\.0\.0\.1:1 {5}disabled/);
    expect(config).not.toMatch(/server hold .*check/);
    expect(errorResponse.split("\n").join("\r\n")).toBe(HOLD_EXPIRED_RESPONSE);
  });

  it("refuses vLLM's development endpoints to clients (403) and passes the API (swaps.sleepMode's dev mode)", async () => {
    const base = `http://127.0.0.1:${port}`;
    for (const path of DEV_PATHS) {
      const answer = await send(`${base}${path}?level=1`);
      expect(answer.status, path).toBe(403);
    }
    expect(config).toContain(`path_beg ${DEV_PATHS.join(" ")}`);
    expect((await send(`${base}/v1/completions`)).status).toBe(200);
  });

  it("serves blue, holds a request on the hold slot (port 1 refuses), and sends it to green once green is ready", async () => {
    const url = `http://127.0.0.1:${port}/v1/completions`;
    expect(servedBy(await send(url))).toBe("blue");
    const door = new HaproxyFrontDoor(local, { socket, backend: "sglang" });
    expect((await door.servers()).map((s) => [s.name, s.state])).toEqual([
      ["blue", "ready"],
      ["green", "maint"],
      ["hold", "maint"],
    ]);
    await door.setState("hold", "ready");
    await door.setState("blue", "drain");
    const held = send(url, { body: '{"prompt":"held"}' });
    const early = await Promise.race([held, new Promise((r) => setTimeout(() => r("pending"), 2000))]);
    expect(early).toBe("pending");
    await door.setState("green", "ready");
    await door.setState("hold", "maint");
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(servedBy(answer)).toBe("green");
    expect(answer.ms).toBeGreaterThanOrEqual(2000);
  });
});
