import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface StandInServer {
  readonly name: string;
  readonly port: number;
  /** Requests it has answered or is answering, in arrival order: method, path, body length. */
  readonly requests: { method: string; path: string; bodyBytes: number; at: number }[];
  /** Streams open now. */
  streaming(): number;
  /** Stops listening (new connections are refused) and ends every open connection. */
  close(): Promise<void>;
}

/**
 * A small HTTP server standing in for an SGLang unit behind the front door: `POST /v1/completions` (or
 * any path) answers `{"served_by": name, "body_bytes": n}`; `…?stream=N&every=MS` answers an SSE stream
 * of N `data:` events MS apart (like SGLang's `"stream": true`), ending with `data: [DONE]`. It listens
 * on `port` (0: a free one) of 127.0.0.1.
 */
export async function startStandIn(name: string, port = 0): Promise<StandInServer> {
  const requests: StandInServer["requests"] = [];
  let open = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let bodyBytes = 0;
    req.on("data", (chunk: Buffer) => {
      bodyBytes += chunk.length;
    });
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stand-in");
      requests.push({ method: req.method ?? "", path: url.pathname, bodyBytes, at: Date.now() });
      const events = Number(url.searchParams.get("stream") ?? "0");
      if (events <= 0) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ served_by: name, body_bytes: bodyBytes }));
        return;
      }
      const every = Number(url.searchParams.get("every") ?? "100");
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      open += 1;
      let sent = 0;
      const timer = setInterval(() => {
        res.write(`data: ${JSON.stringify({ served_by: name, index: sent })}\n\n`);
        sent += 1;
        if (sent >= events) {
          clearInterval(timer);
          res.end("data: [DONE]\n\n");
          open -= 1;
        }
      }, every);
      res.on("close", () => {
        if (sent < events) {
          clearInterval(timer);
          open -= 1;
        }
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    name,
    port: (server.address() as AddressInfo).port,
    requests,
    streaming: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
