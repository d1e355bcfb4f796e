import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "./free-port.ts";
import { waitForPort } from "./wait-for-port.ts";

/** Where Debian's `haproxy` package puts the binary (it is not on a non-root PATH). */
export const HAPROXY_BINARY = "/usr/sbin/haproxy";
const INSTALL = "apt-get install -y haproxy socat (or run scripts/bootstrap.sh as root)";

export interface BenchHaproxyServer {
  /** The server's name in the backend, e.g. `blue`. */
  name: string;
  /** The loopback port it points at (something may or may not listen there). */
  port: number;
  /** Starts in `maint` (`disabled` in the configuration) instead of `ready`. */
  disabled?: boolean;
  /** Health-checked (`check inter 500ms fall 1 rise 1`); unchecked by default, as the hold needs. */
  check?: boolean;
}

export interface BenchHaproxyOptions {
  /** The backend's name (`sglang` unless given). */
  backend?: string;
  servers: readonly BenchHaproxyServer[];
  /** `retries`: with `timeout connect 1s`, about the hold bound in seconds (default 10). */
  retries?: number;
  /** `option redispatch <n>` (default 1: every retry picks a server again). `0` leaves redispatch off. */
  redispatch?: number;
  /** `retry-on` (default `conn-failure`). */
  retryOn?: string;
  /** Lines added to the `defaults` section, for an experiment. */
  extraDefaults?: readonly string[];
}

export interface BenchHaproxy {
  /** The frontend's loopback port: where clients connect. */
  readonly port: number;
  readonly url: string;
  /** The Runtime API socket (`level admin`, mode 600). */
  readonly socket: string;
  readonly backend: string;
  readonly configPath: string;
  readonly dir: string;
  readonly pid: number;
  /** The configuration it runs, for a failing test's message. */
  config(): Promise<string>;
  /** SIGTERM (hard stop: HAProxy closes every connection), waits for the process to exit. */
  stop(): Promise<void>;
}

/**
 * A real HAProxy of our own (the distribution's package), in the foreground (`-db`), with a frontend on a
 * free loopback port, one HTTP backend whose named servers point at the given loopback ports, and the
 * Runtime API on a UNIX socket in `dir`. It never touches a system HAProxy or its configuration. The
 * hold settings are the ones docs/front-door.md gives operators: `timeout connect 1s`, `retries N`,
 * `retry-on conn-failure`, `option redispatch 1`.
 */
export async function startHaproxy(dir: string, options: BenchHaproxyOptions): Promise<BenchHaproxy> {
  if (!existsSync(HAPROXY_BINARY))
    throw new Error(`haproxy is not installed (no ${HAPROXY_BINARY}). Install it: ${INSTALL}`);
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  const backend = options.backend ?? "sglang";
  const socket = join(dir, "admin.sock");
  const configPath = join(dir, "haproxy.cfg");
  const errorFile = join(dir, "503.http");
  await writeFile(errorFile, HOLD_EXPIRED_RESPONSE);
  await writeFile(configPath, renderConfig({ ...options, backend, port, socket, errorFile }));

  const logPath = join(dir, "haproxy.log");
  const child: ChildProcess = spawn(HAPROXY_BINARY, ["-db", "-f", configPath], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const failed = new Promise<never>((_, reject) => {
    child.once("error", (error) =>
      reject(new Error(`haproxy could not be started: ${error.message}. Install it: ${INSTALL}`)),
    );
    child.once("exit", (code, signal) =>
      reject(new Error(`haproxy exited at start (${code ?? signal}): ${output.trim()}`)),
    );
  });
  failed.catch(() => {});
  await Promise.race([waitForPort(port, "haproxy"), failed]);
  await Promise.race([waitForFile(socket), failed]);

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    socket,
    backend,
    configPath,
    dir,
    pid: child.pid ?? 0,
    config: () => readFile(configPath, "utf8"),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      await writeFile(logPath, output);
    },
  };
}

/**
 * What a client gets when no server took its request within the hold (HAProxy's own 503 replaced, as
 * docs/front-door.md shows): an OpenAI-style error body that says what happened.
 */
export const HOLD_EXPIRED_RESPONSE = [
  "HTTP/1.1 503 Service Unavailable",
  "content-type: application/json",
  "cache-control: no-cache",
  "retry-after: 10",
  "connection: close",
  "",
  '{"error":{"message":"no model server took this request within the front door\'s hold; the model is being swapped, retry shortly","type":"server_error","code":"front_door_hold_expired"}}',
  "",
].join("\r\n");

/**
 * The engines' administrative endpoints: vLLM's development ones, served with VLLM_SERVER_DEV_MODE=1
 * (vllm/entrypoints/serve/dev and sleep routers), and SGLang's memory and weight routes, which it serves
 * always (srt/entrypoints/http_server.py). The front door refuses them, so only the bot on the host can
 * park, wake or reload a model.
 */
export const DEV_PATHS = [
  "/sleep",
  "/wake_up",
  "/is_sleeping",
  "/collective_rpc",
  "/reset_prefix_cache",
  "/reset_mm_cache",
  "/server_info",
  "/release_memory_occupation",
  "/resume_memory_occupation",
  "/update_weights_from_disk",
  "/update_weights_from_tensor",
  "/update_weights_from_distributed",
  "/init_weights_update_group",
  "/pause_generation",
  "/continue_generation",
  "/flush_cache",
];

function renderConfig(
  o: BenchHaproxyOptions & { backend: string; port: number; socket: string; errorFile: string },
): string {
  const redispatch = o.redispatch ?? 1;
  const servers = o.servers.map((s) => {
    const words = [`server ${s.name} 127.0.0.1:${s.port}`];
    if (s.check === true) words.push("check inter 500ms fall 1 rise 1");
    if (s.disabled === true) words.push("disabled");
    return `  ${words.join(" ")}`;
  });
  return [
    "global",
    `  stats socket ${o.socket} mode 600 level admin expose-fd listeners`,
    "  nbthread 1",
    "defaults",
    "  mode http",
    "  timeout connect 1s",
    "  timeout client 60s",
    "  timeout server 60s",
    `  errorfile 503 ${o.errorFile}`,
    `  retries ${o.retries ?? 10}`,
    `  retry-on ${o.retryOn ?? "conn-failure"}`,
    redispatch === 0 ? "  no option redispatch" : `  option redispatch ${redispatch}`,
    ...(o.extraDefaults ?? []).map((line) => `  ${line}`),
    "frontend clients",
    `  bind 127.0.0.1:${o.port}`,
    // as docs/front-door.md: vLLM's development endpoints (its dev mode, swaps.sleepMode) never from clients
    `  http-request deny deny_status 403 if { path_beg ${DEV_PATHS.join(" ")} }`,
    `  default_backend ${o.backend}`,
    `backend ${o.backend}`,
    "  balance roundrobin",
    ...servers,
    "",
  ].join("\n");
}

async function waitForFile(path: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`haproxy did not create ${path} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
