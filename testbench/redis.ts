import { type ChildProcess, spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "./free-port.ts";
import { waitForPort } from "./wait-for-port.ts";

export interface BenchRedis {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Stops redis-server (SIGTERM, it flushes its AOF) and waits for it to exit. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same data directory. */
  start(): Promise<void>;
}

/**
 * A real redis-server of our own on a free loopback port (never the machine's shared one), with AOF and
 * noeviction as production requires.
 */
export async function startRedis(dir: string): Promise<BenchRedis> {
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  let child: ChildProcess | undefined;

  const start = async () => {
    child = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir,
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--save",
        "",
        "--maxmemory-policy",
        "noeviction",
        "--logfile",
        join(dir, "redis.log"),
      ],
      { stdio: "ignore" },
    );
    child.on("error", (error) => {
      throw new Error(
        `redis-server could not be started: ${error.message}. Install it: apt-get install redis-server`,
      );
    });
    await waitForPort(port, "redis-server");
  };

  const end = async (signal: NodeJS.Signals) => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill(signal);
    await exited;
  };

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    stop: () => end("SIGTERM"),
    kill: () => end("SIGKILL"),
    start,
  };
}
