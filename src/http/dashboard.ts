import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Queue } from "bullmq";
import { CodedError } from "../errors.ts";
import type { Logger } from "../log.ts";

export const DASHBOARD_PATH = "/admin/queues";

export interface DashboardOptions {
  queues: readonly Queue[];
  user: string;
  password: string;
  /** Where a dashboard that cannot be served is said, once, with its fix. */
  log: Logger;
}

/** The packages the dashboard needs: not in a production install (npm ci --omit=dev) unless added. */
export const DASHBOARD_PACKAGES = [
  "@bull-board/api@9.10.1",
  "@bull-board/hono@9.10.1",
  "@hono/node-server@2.1.8",
  "hono@4.13.19",
];

type Listener = (req: IncomingMessage, res: ServerResponse) => unknown;

/**
 * bull-board and Hono, loaded when the dashboard is turned on: they are dev dependencies, 45 MB of a
 * production install that most deployments never open (bull-board pulls a TypeScript compiler in through
 * valibot). An operator who wants the dashboard installs them beside modelswap (docs/operations.md).
 */
async function loadBoard(options: DashboardOptions): Promise<Listener> {
  const [
    { createBullBoard },
    { BullMQAdapter },
    { HonoAdapter },
    { getRequestListener },
    { serveStatic },
    { Hono },
  ] = await Promise.all([
    import("@bull-board/api"),
    import("@bull-board/api/bullMQAdapter"),
    import("@bull-board/hono"),
    import("@hono/node-server"),
    import("@hono/node-server/serve-static"),
    import("hono"),
  ]);
  const serverAdapter = new HonoAdapter(serveStatic);
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: options.queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
    serverAdapter,
    options: { uiConfig: { boardTitle: "modelswap queues" } },
  });
  const app = new Hono();
  app.route(DASHBOARD_PATH, serverAdapter.registerPlugin());
  return getRequestListener(app.fetch);
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
  const board = loadBoard(options).catch((error: unknown) => {
    const problem = new CodedError(
      "DASHBOARD_UNAVAILABLE",
      `MODELSWAP_DASHBOARD_PASSWORD is set but the queue dashboard's packages are not installed: ${(error as Error).message}`,
      `install them beside modelswap (npm install ${DASHBOARD_PACKAGES.join(" ")} in its directory, or in the image), or unset MODELSWAP_DASHBOARD_PASSWORD`,
      { cause: error },
    );
    options.log.error({ code: problem.code, fix: problem.fix }, problem.message);
    return problem;
  });
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
    void board.then((listener) => {
      if (typeof listener === "function") return listener(req, res);
      res.writeHead(503, { "content-type": "text/plain; charset=utf-8" });
      res.end(`${listener.code}: the queue dashboard is not installed here; ${listener.fix}\n`);
    });
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
