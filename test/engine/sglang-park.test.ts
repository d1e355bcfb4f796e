import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { engineFor } from "../../src/engine/engines.ts";

const run = promisify(execFile);

/*
 * SGLang's park command on the host, run by bash against a server on loopback that answers as SGLang does
 * (GET /get_load: a list of each data-parallel rank's num_reqs, test_srt_endpoint.py; POST
 * /release_memory_occupation: 200 {"success": true}). A release the scheduler finds busy takes the server
 * down (sglang-server-memory.mjs), so the command releases only once every rank has no request, and says
 * why when it never does.
 */

interface Fake {
  port: number;
  releasedAt: number[];
  loadCalls: number;
}

let server: Server | undefined;

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A loopback SGLang whose /get_load answers `load(call)` (undefined: 404). */
async function fakeSglang(load: (call: number) => number[] | undefined): Promise<Fake> {
  const fake: Fake = { port: 0, releasedAt: [], loadCalls: 0 };
  server = createServer((req, res) => {
    if (req.url === "/get_load") {
      const reqs = load(fake.loadCalls++);
      if (reqs === undefined) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"detail":"Not Found"}');
        return;
      }
      const body = reqs.map((n, dp) => ({
        dp_rank: dp,
        num_reqs: n,
        num_waiting_reqs: 0,
        num_tokens: n * 256,
      }));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      return;
    }
    if (req.url === "/release_memory_occupation" && req.method === "POST") {
      fake.releasedAt.push(fake.loadCalls);
      res.writeHead(200, { "content-type": "application/json" }).end('{"success":true,"message":"Success"}');
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  fake.port = (server!.address() as AddressInfo).port;
  return fake;
}

const park = async (port: number, timeoutSeconds: number) =>
  (
    await run("bash", ["-c", engineFor("sglang").sleep!.sleepCommand(port, timeoutSeconds).text])
  ).stdout.trim();

describe("SGLang's park command", () => {
  it("waits until no rank has a request, then releases once", async () => {
    // rank 1 still decodes for two looks
    const fake = await fakeSglang((call) => (call < 2 ? [0, 1] : [0, 0]));
    expect(await park(fake.port, 60)).toBe("200");
    expect(fake.releasedAt).toEqual([3]);
  });

  it("does not release a server that stays busy: it says so, and the switch stops the unit instead", async () => {
    const fake = await fakeSglang(() => [2]);
    const began = Date.now();
    expect(await park(fake.port, 1)).toBe("requests still running after 1 s");
    // the whole second it promised, not what was left of the clock's current second (CI saw one look)
    expect(Date.now() - began).toBeGreaterThanOrEqual(1000);
    expect(fake.releasedAt).toEqual([]);
    expect(fake.loadCalls).toBeGreaterThan(1);
  });

  it("does not release a server whose load it cannot read", async () => {
    const fake = await fakeSglang(() => undefined);
    expect(await park(fake.port, 60)).toBe("no load from /get_load, so it could not be known idle");
    expect(fake.releasedAt).toEqual([]);
  });
});
