import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { curlStatus } from "../../src/engine/engine.ts";
import { httpStatus } from "../../src/engine/http-status.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { sh } from "../../src/host/shell-quote.ts";
import { freePort } from "../../testbench/free-port.ts";

/**
 * The health probe asked by bash itself (/dev/tcp) answers as curl does, against a real HTTP server on
 * loopback, run by real bash: each case is also asked of curl and the two must agree, except that bash
 * starts no process on the way.
 */
const transport = new LocalTransport({ hostName: "t", commandTimeoutMs: 20_000, extraPath: [] });
const exec = transport.exec.bind(transport);
let server: Server;
let port: number;
const seen: {
  method: string;
  url: string;
  version: string;
  body: string;
  headers: IncomingMessage["headers"];
}[] = [];
let answer: (res: ServerResponse) => void = (res) => res.end();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        version: req.httpVersion,
        body,
        headers: req.headers,
      });
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function both(p: number, path: string, timeout: number, body?: string) {
  const bash = await exec(httpStatus(p, path, timeout, body));
  const curl = await exec(curlStatus(`http://127.0.0.1:${p}${path}`, timeout, body));
  return {
    bash: { status: bash.stdout.trim(), code: bash.code },
    curl: { status: curl.stdout.trim(), code: curl.code },
  };
}

describe("httpStatus", () => {
  it("reads a 200, and a 503, as curl does", async () => {
    answer = (res) => res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    expect(await both(port, "/health_generate", 5)).toEqual({
      bash: { status: "200", code: 0 },
      curl: { status: "200", code: 0 },
    });
    answer = (res) => res.writeHead(503).end();
    expect(await both(port, "/health_generate", 5)).toEqual({
      bash: { status: "503", code: 0 },
      curl: { status: "503", code: 0 },
    });
  });

  it("sends what curl sends: the method, path, HTTP/1.1, and a POST's JSON body byte for byte", async () => {
    answer = (res) => res.writeHead(200).end();
    seen.length = 0;
    const body = JSON.stringify({ prompt: "Hi", max_tokens: 1, temperature: 0 });
    await exec(httpStatus(port, "/v1/completions", 5, body));
    await exec(httpStatus(port, "/health_generate", 5));
    expect(seen.map(({ method, url, version, body: b }) => ({ method, url, version, body: b }))).toEqual([
      { method: "POST", url: "/v1/completions", version: "1.1", body },
      { method: "GET", url: "/health_generate", version: "1.1", body: "" },
    ]);
    expect(seen[0]?.headers).toMatchObject({
      host: `127.0.0.1:${port}`,
      "content-type": "application/json",
      "content-length": String(body.length),
    });
  });

  it("times out as curl does (28, 000) when the server accepts and never answers", async () => {
    answer = () => undefined; // never answers
    const started = Date.now();
    expect(await both(port, "/health_generate", 1)).toEqual({
      bash: { status: "000", code: 28 },
      curl: { status: "000", code: 28 },
    });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("says 52 (empty reply) when the server closes without a status line", async () => {
    // end(), a FIN: destroy() with the request unread would be a reset, which curl calls 56, not 52
    const silent: TcpServer = createTcpServer((socket) => socket.once("data", () => socket.end()));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const p = (silent.address() as { port: number }).port;
      expect(await both(p, "/health_generate", 5)).toEqual({
        bash: { status: "000", code: 52 },
        curl: { status: "000", code: 52 },
      });
    } finally {
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("survives a server that resets the connection at once (bash is not killed by SIGPIPE)", async () => {
    const rude: TcpServer = createTcpServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => rude.listen(0, "127.0.0.1", resolve));
    try {
      const p = (rude.address() as { port: number }).port;
      // the reset comes as the request is written: without the trap bash died of SIGPIPE (code null)
      const body = JSON.stringify({ prompt: "x".repeat(32 * 1024) });
      for (let i = 0; i < 3; i++) {
        const run = await exec(sh`${httpStatus(p, "/v1/completions", 5, body)}; echo "rc=$?"`);
        // no status line came: 000 and curl's 52, and the shell goes on
        expect(run.stdout.trim().split("\n")).toEqual(["000", "rc=52"]);
        expect(run.signal).toBeNull();
      }
    } finally {
      await new Promise((resolve) => rude.close(resolve));
    }
  });

  it("asks curl when nothing listens, so a refusal reads exactly as before (7)", async () => {
    const closed = await freePort();
    expect(await both(closed, "/health_generate", 5)).toEqual({
      bash: { status: "000", code: 7 },
      curl: { status: "000", code: 7 },
    });
  });

  it("starts no process when the server answers", async () => {
    answer = (res) => res.writeHead(200).end();
    // with no PATH no program can be started (curl included): the answer can only come from bash itself
    const run = await exec({ text: `PATH=/nonexistent; ${httpStatus(port, "/health_generate", 5).text}` });
    expect(run.stdout.trim()).toBe("200");
    expect(run.code).toBe(0);
  });
});
