import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort } from "../../testbench/free-port.ts";

/**
 * The bench's ports come from below the kernel's ephemeral range: a port a unit or a front-door slot
 * counts on while nothing listens there can never go to a listener on port 0 (a simulated Slack, a Hub) or
 * an outgoing connection of a test file running beside this one.
 */
describe("freePort", () => {
  it("hands out distinct ports below the ephemeral range, each free to listen on", async () => {
    const ephemeralFirst = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
    );
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralFirst);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(ports[0], "127.0.0.1", resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });

  it("never hands out a port something listens on", async () => {
    const taken = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port + 1, "127.0.0.1", resolve));
    try {
      const next = await Promise.all(Array.from({ length: 5 }, () => freePort()));
      expect(next).not.toContain(port + 1);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
