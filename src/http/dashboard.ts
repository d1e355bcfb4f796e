import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { HonoAdapter } from "@bull-board/hono";
import { getRequestListener } from "@hono/node-server";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Queue } from "bullmq";
import { Hono } from "hono";

export const DASHBOARD_PATH = "/admin/queues";

export interface DashboardOptions {
  queues: readonly Queue[];
  user: string;
  password: string;
}

/**
 * bull-board's queue dashboard behind HTTP basic auth, as a plain node request handler (mounted on
 * Bolt's HTTP receiver or on the ops server). Hono is the adapter: it has no dependencies of its own.
 * Read-only: a swap's job is the only thing that advances it, so removing or retrying one by hand could
 * strand a swap with its host locked; swaps are changed with `/llm cancel` and `/llm rollback`.
 */
export function createDashboard(
  options: DashboardOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const serverAdapter = new HonoAdapter(serveStatic);
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: options.queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
    serverAdapter,
    options: { uiConfig: { boardTitle: "modelswap queues" } },
  });
  const app = new Hono();
  app.route(DASHBOARD_PATH, serverAdapter.registerPlugin());
  const listener = getRequestListener(app.fetch);
  const expected = digest(`${options.user}:${options.password}`);
  return (req, res) => {
    if (!authorized(req.headers.authorization, expected)) {
      res.writeHead(401, {
        "content-type": "text/plain; charset=utf-8",
        "www-authenticate": 'Basic realm="modelswap queues", charset="UTF-8"',
      });
      res.end("authentication required: the user and MODELSWAP_DASHBOARD_PASSWORD\n");
      return;
    }
    void listener(req, res);
  };
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/**
 * Compares `user:password` in constant time: both sides are hashed first, so neither the length nor
 * the first differing byte of the password shows in the time the answer takes.
 */
function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header ?? "");
  const given = Buffer.from(match?.[1] ?? "", "base64").toString("utf8");
  return timingSafeEqual(digest(given), expected) && match !== null;
}
