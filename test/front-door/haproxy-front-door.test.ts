import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isCodedError } from "../../src/errors.ts";
import { HaproxyFrontDoor } from "../../src/front-door/haproxy-front-door.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { quote, type ShellCommand } from "../../src/host/shell-quote.ts";
import type { ExecOptions, HostTransport } from "../../src/host/transport.ts";
import { freePort } from "../../testbench/free-port.ts";
import { type BenchHaproxy, startHaproxy } from "../../testbench/haproxy.ts";
import { type StandInServer, startStandIn } from "../../testbench/stand-in-server.ts";
import { tempDir } from "../support/tmp.ts";

/** The adapter against a real HAProxy 2.6 on loopback: what it reads, what it changes, how it fails. */
const local = new LocalTransport({ hostName: "gpu-1", commandTimeoutMs: 10_000 });

/** Counts the commands that reach the host, to prove refused input never does. */
class CountingTransport implements HostTransport {
  readonly hostName = "gpu-1";
  commands: string[] = [];
  exec(command: ShellCommand, options?: ExecOptions) {
    this.commands.push(`${command.text} <<< ${options?.stdin ?? ""}`);
    return local.exec(command, options);
  }
  openShell = () => local.openShell();
  close = () => Promise.resolve();
}

/** Runs every command as `nobody`, as a bot user outside the socket's owner would (the suite runs as root). */
const asNobody: HostTransport = {
  hostName: "gpu-1",
  exec: (command, options) =>
    local.exec(
      { text: `setpriv --reuid=65534 --regid=65534 --clear-groups bash -c ${quote(command.text)}` },
      options,
    ),
  openShell: () => local.openShell(),
  close: () => Promise.resolve(),
};

let dir: { path: string; remove: () => Promise<void> };
let haproxy: BenchHaproxy;
let blue: StandInServer;
let greenPort: number;
let door: HaproxyFrontDoor;

beforeAll(async () => {
  dir = await tempDir("modelswap-front-door-");
  blue = await startStandIn("blue");
  greenPort = await freePort();
  haproxy = await startHaproxy(join(dir.path, "haproxy"), {
    servers: [
      { name: "blue", port: blue.port },
      { name: "green", port: greenPort, disabled: true },
    ],
  });
  door = new HaproxyFrontDoor(local, { socket: haproxy.socket, backend: haproxy.backend });
});
afterAll(async () => {
  await haproxy?.stop();
  await blue?.close();
  await dir?.remove();
});

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string; fix: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error === undefined) throw new Error("expected a failure, it succeeded");
  if (isCodedError(error)) return { code: error.code, message: error.message, fix: error.fix };
  const e = error as Error;
  return { code: e.name, message: e.message, fix: "" };
}

describe("HaproxyFrontDoor over a real HAProxy's Runtime API", () => {
  it("reads the backend's servers: state, health, address, port, sessions", async () => {
    expect(await door.servers()).toEqual([
      {
        name: "blue",
        state: "ready",
        health: "unchecked",
        address: "127.0.0.1",
        port: blue.port,
        sessions: 0,
        queued: 0,
      },
      {
        name: "green",
        state: "maint",
        health: "down",
        address: "127.0.0.1",
        port: greenPort,
        sessions: 0,
        queued: 0,
      },
    ]);
    expect(door.description).toBe(`HAProxy backend sglang (socket ${haproxy.socket} on gpu-1)`);
  });

  it("sets ready, drain and maint, and reads each back", async () => {
    for (const state of ["ready", "drain", "maint", "ready"] as const) {
      await door.setState("green", state);
      expect((await door.server("green")).state).toBe(state);
    }
    await door.setState("green", "maint");
    expect((await door.server("blue")).state).toBe("ready");
  });

  it("points a server at another address and port", async () => {
    await door.setAddress("green", "127.0.0.1", blue.port);
    expect(await door.server("green")).toMatchObject({ address: "127.0.0.1", port: blue.port });
    await door.setAddress("green", "127.0.0.2", greenPort);
    expect(await door.server("green")).toMatchObject({ address: "127.0.0.2", port: greenPort });
    await door.setAddress("green", "127.0.0.1", greenPort);
  });

  it("counts a request in flight as a session of its server", async () => {
    const response = await fetch(`${haproxy.url}/v1/completions?stream=20&every=100`, { method: "POST" });
    const reader = response.body!.getReader();
    await reader.read();
    expect(await door.sessions("blue")).toBe(1);
    expect(await door.sessions("green")).toBe(0);
    await reader.cancel();
  });

  it("refuses names, states, addresses and ports outside the grammar before any command runs", async () => {
    const counting = new CountingTransport();
    const d = new HaproxyFrontDoor(counting, { socket: haproxy.socket, backend: haproxy.backend });
    for (const attempt of [
      () => d.setState("blue; shutdown sessions server sglang/blue", "drain"),
      () => d.setState("blue\nset server sglang/green state ready", "drain"),
      () => d.setState("sglang/blue", "drain"),
      () => d.setState("blue", "stopping" as "drain"),
      () => d.setAddress("blue", "gpu-2.internal", 30000),
      () => d.setAddress("blue", "127.0.0.1", 99999),
      () => d.sessions(""),
    ])
      expect((await failure(attempt())).code).toBe("ZodError");
    expect(counting.commands).toEqual([]);
    expect(
      () => new HaproxyFrontDoor(counting, { socket: "/run/haproxy/a,b.sock", backend: "sglang" }),
    ).toThrow();
    expect(() => new HaproxyFrontDoor(counting, { socket: "/run/../etc/x", backend: "sglang" })).toThrow();
    expect(() => new HaproxyFrontDoor(counting, { socket: haproxy.socket, backend: "be be" })).toThrow();
  });

  it("tells an unknown backend and an unknown server apart, with the fix", async () => {
    const other = new HaproxyFrontDoor(local, { socket: haproxy.socket, backend: "vllm" });
    const backend = await failure(other.servers());
    expect(backend.code).toBe("FRONT_DOOR_UNKNOWN_SERVER");
    expect(backend.message).toContain(
      "no backend HAProxy backend vllm on gpu-1 (HAProxy: Can't find backend.)",
    );
    expect((await failure(other.setState("blue", "drain"))).message).toContain("No such backend.");
    const server = await failure(door.setState("purple", "drain"));
    expect(server).toMatchObject({ code: "FRONT_DOOR_UNKNOWN_SERVER" });
    expect(server.message).toContain("No such server.");
    expect(server.fix).toContain("show servers state");
    expect((await failure(door.sessions("purple"))).code).toBe("FRONT_DOOR_UNKNOWN_SERVER");
  });

  it("says when the socket is missing, not ours to open, or dead", async () => {
    const missing = new HaproxyFrontDoor(local, { socket: join(dir.path, "nope.sock"), backend: "sglang" });
    const gone = await failure(missing.servers());
    expect(gone.code).toBe("FRONT_DOOR_SOCKET_MISSING");
    expect(gone.fix).toContain("stats socket");

    const denied = await failure(
      new HaproxyFrontDoor(asNobody, { socket: haproxy.socket, backend: "sglang" }).servers(),
    );
    expect(denied).toMatchObject({ code: "FRONT_DOOR_DENIED" });
    expect(denied.fix).toContain("mode 660 group modelswap");

    // a socket file nobody listens on: what a stopped HAProxy leaves behind
    const stale = join(dir.path, "stale.sock");
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(stale, resolve));
    await new Promise<void>((resolve) => {
      // closing a listening UNIX socket unlinks it in node; listen again without closing: keep the path
      server.close(() => resolve());
    });
    const dead = await failure(new HaproxyFrontDoor(local, { socket: stale, backend: "sglang" }).servers());
    expect(["FRONT_DOOR_UNREACHABLE", "FRONT_DOOR_SOCKET_MISSING"]).toContain(dead.code);
  });

  it("refuses an answer it cannot read rather than guess", async () => {
    const socket = join(dir.path, "junk.sock");
    const junk: Server = createServer((c) => {
      c.on("data", () => c.end("Welcome to something else\n\n"));
    });
    await new Promise<void>((resolve) => junk.listen(socket, resolve));
    try {
      const d = new HaproxyFrontDoor(local, { socket, backend: "sglang" });
      const bad = await failure(d.servers());
      expect(bad.code).toBe("FRONT_DOOR_BAD_ANSWER");
      expect(bad.message).toContain('show servers state began with "Welcome to something else"');
      expect((await failure(d.sessions("blue"))).message).toContain(
        'show stat did not begin with its "# pxname,…" header',
      );
      expect((await failure(d.setState("blue", "drain"))).code).toBe("FRONT_DOOR_REFUSED");
    } finally {
      await new Promise((resolve) => junk.close(resolve));
    }
  });
});
