import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, open, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve as resolvePath } from "node:path";
import { promisify } from "node:util";
import { pino } from "pino";
import { parse, stringify } from "yaml";
import { type Config, configSecrets, loadConfig } from "../src/config/load-config.ts";
import { createLogger, type Logger } from "../src/log.ts";
import { type Roles, type RunningModelswap, startModelswap } from "../src/main.ts";
import type { CatalogueRecipe } from "../src/plan/catalogue-schema.ts";
import { freePort } from "./free-port.ts";
import {
  createEngineUpstream,
  createSimGpuHost,
  createVllmUpstream,
  DEFAULT_ENGINE_REFS,
  type EngineRefSpec,
  type EngineUpstream,
  type GpuSetName,
  installVllm,
  makeEnginePatch,
  type SimGpuHost,
  type SimGpuHostOptions,
} from "./gpu-host/index.ts";
import { type BenchHaproxy, startHaproxy } from "./haproxy.ts";
import { type ModelPreset, makeModel, type SimHub, startSimHub } from "./hub/index.ts";
import { modelswapBin } from "./modelswap-bin.ts";
import { type BenchRedis, startRedis } from "./redis.ts";
import { newAppToken, type SlackEmulator, startSlackEmulator } from "./slack/index.ts";
import { type BenchSshd, startSshd } from "./sshd.ts";
import { startTcpHold, type TcpHold } from "./tcp-hold.ts";
import { until } from "./until.ts";
import { waitForPort } from "./wait-for-port.ts";

const run = promisify(execFile);

/** The people of the bench workspace. */
export const USERS = {
  alice: "U0ALICE001", // requester
  bob: "U0BOB00001", // approver
  carol: "U0CAROL001", // requester through the S0MLOPS001 user group
  mallory: "U0MALLORY1", // nobody
  dave: "U0DAVE0001", // requester and approver (for self-approval)
  erin: "U0ERIN0001", // approver through the S0APPROVE1 user group, in benches that give it members
} as const;
export const CHANNEL = "C0LLMOPS01";
export const MLOPS_GROUP = "S0MLOPS001";
/** The approvers' user group: listed under approvers.groups only when a bench gives it members. */
export const APPROVERS_GROUP = "S0APPROVE1";

/**
 * Free disk at the models dir of the seeds' 8× RTX PRO 6000 Blackwell box: "Is there disk (7 TB free)?"
 * (DESIGN.md §1, the real swap done by hand). A host given `diskFreeBytes` reports it through `df`.
 */
export const SEED_BOX_FREE_DISK_BYTES = 7e12;

/**
 * The bench's weight scale for real-checkpoint presets: `makeModel(kind, { scale: BENCH_WEIGHT_SCALE })`
 * serves the real shards at 1/32768 of their size (the seeds' 223 GB Qwen3.5 NVFP4: 19 shards, 6.8 MB),
 * and a bench started with `weightScale: BENCH_WEIGHT_SCALE` tells the bot (config bench.weightScale).
 */
export const BENCH_WEIGHT_SCALE = 32768;

export interface BenchHostSpec {
  name: string;
  gpus?: GpuSetName;
  /** How the bot reaches it (default ssh, through the bench's real sshd). */
  transport?: "ssh" | "local";
  /** The model the host serves at start (a Hub preset), or false for none. Default: a small BF16 model. */
  serving?:
    | {
        preset: ModelPreset;
        unit?: string;
        /** Its --tp-size (default: every GPU), so a blue/green swap finds GPUs to spare. */
        tp?: number;
        /** Its --mem-fraction-static (default SGLang's), so one that leaves room can share its GPUs. */
        memFraction?: number;
      }
    | false;
  /**
   * A broken way to reach it: `refused` (nothing listens), `silent` (TCP accepts, SSH never answers),
   * `stale-key` (the pinned host key is not the one the host presents); `relay`: reached well, through
   * a TCP relay a test can hold or cut mid-swap (bench.relay(name)).
   */
  reach?: "refused" | "silent" | "stale-key" | "relay";
  /** Faults set before the serving unit starts (see gpu-host/README.md and SGLANG.md). */
  faults?: Record<string, unknown>;
  /** More settings of the host's config entry, as written (e.g. `flags`, house flags; `engineRef`). */
  config?: Record<string, unknown>;
  /**
   * What `df` reports available at the models dir (the sim's `diskFreeBytes`), e.g.
   * SEED_BOX_FREE_DISK_BYTES. Default: this machine's real free space.
   */
  diskFreeBytes?: number;
  /**
   * The size of the disk the host's sandbox is on (the sim's `diskSizeBytes`): `df` reports it less what
   * the sandbox holds, so deleted files give their space back. Wins over `diskFreeBytes`.
   */
  diskSizeBytes?: number;
  /** The host's RAM as `free` reports it (GiB; default 1024): with less, a big model is not preloaded. */
  hostMemGiB?: number;
  /** Wait until the serving model answers /health (default true when serving). */
  waitHealthy?: boolean;
  /** The bot's per-command timeout for this host (s); default the bench's. */
  commandTimeoutSeconds?: number;
  /** Give the host a local engine patch (made against the upstream's main) in its config's enginePatches. */
  enginePatch?: boolean;
  /** The engine at start: `preinstalled` (default, SGLang 0.5.5 installed editable) or `none`. */
  engine?: SimGpuHostOptions["engine"];
  /** Which Hugging Face CLIs the host has (default `hf`). */
  hubCli?: SimGpuHostOptions["hubCli"];
  /**
   * `sudo: true` in its config: privileged commands go through the sandbox's `sudo` (gpu-host/README.md),
   * whose rules are the fault `sudoRules` (default: the rules docs/operations.md gives).
   */
  sudo?: boolean;
  /**
   * A light host for fleet-sized benches: it shares the sandbox, serving unit and port of the named host
   * (which must not itself share one), but has its own name, SSH key and so its own SSH connection.
   * Its other fields are ignored.
   */
  sandboxOf?: string;
  /**
   * A real HAProxy in front of the host's units (docs/front-door.md): slot `blue` at servingPort and the
   * unchecked slot `hold` at a port nothing listens on, steered through its Runtime API socket. `true`
   * holds requests 60 s; `{ holdSeconds }` sets HAProxy's `retries` (and the config's holdSeconds).
   * `drainSeconds` sets the host's drain bound (default 120). `standby` adds the second unit slot
   * `green` (disabled, at a free port: hosts[].frontDoor.standby) for blue/green swaps.
   */
  frontDoor?: true | { holdSeconds?: number; drainSeconds?: number; standby?: boolean };
  /**
   * vLLM on this host (testbench/gpu-host/VLLM.md): `also` beside SGLang (hosts[].engines.vllm, a swap
   * picks it with --engine vllm), `only` as the host's engine. Its venv is the sandbox's, with the vLLM
   * 0.18 release installed as docs/operations.md asks (its dependencies, and `vllm bench serve`); its
   * upstream is the bench's simulated vllm-project/vllm (tags v0.17.1, v0.18.0, branch main).
   */
  vllm?: "also" | "only";
}

export interface BenchOptions {
  hosts?: BenchHostSpec[];
  /** Connect timeout the bot uses for every SSH host (s). */
  connectTimeoutSeconds?: number;
  commandTimeoutSeconds?: number;
  /** Where the bot's pino log goes (default: a file in the bench directory). */
  logTo?: "file" | "silent";
  /** The config's `swaps:` section (polling, card throttling, timeouts). */
  swaps?: Record<string, number | string | boolean | string[]>;
  /** The config's `approvals:` section. */
  approvals?: { allowSelfApproval?: boolean; ttlMinutes?: number };
  /**
   * Members of the approvers' user group APPROVERS_GROUP (e.g. `[USERS.erin]`); when given, the group is
   * listed under `approvers.groups`. Default: no such group in the config.
   */
  approverGroup?: string[];
  /** The config's `access:` section (e.g. `groupStalenessMinutes`). */
  access?: { groupStalenessMinutes?: number };
  /** Overrides in the config's `health:` section. The bench checks hourly unless a test asks for more, so
   * alerts never land in tests that are not about them (the monitor's tests use a 1 s interval). */
  health?: {
    intervalSeconds?: number;
    failureThreshold?: number;
    checkTimeoutSeconds?: number;
    recoveryThreshold?: number;
  };
  /**
   * The secrets the bot is given, for tests that look for them where they must not be (defaults: random
   * ones, and no HF_TOKEN). `hfToken` sets HF_TOKEN and makes it the Hub's only valid token; `keyDir` is the
   * directory (absolute, or inside the bench directory) that holds the SSH client keys.
   */
  secrets?: { botToken?: string; signingSecret?: string; hfToken?: string; keyDir?: string };
  /**
   * Refs the engine upstream has besides its default ones (tag v0.5.2, branch main), each a commit on the
   * last; a ref `refs/pull/N/head` is a pull request (as GitHub publishes them), not a branch.
   */
  engineRefs?: EngineRefSpec[];
  /** The config's `engine:` section (allowedRefs, unlistedRefs). */
  enginePolicy?: Record<string, unknown>;
  /** The config's `hub:` section (allowPullRequests, remoteCodeOrgs). */
  hubPolicy?: Record<string, unknown>;
  /** The config's `groups:` section (host groups a rollout swaps together). */
  groups?: Record<string, unknown>;
  /** The config's `models:` section (per-model profiles: flags, tp, engine, engineRef). */
  models?: Record<string, unknown>[];
  /** The config's `recipes:` section (overrides, own). */
  recipes?: Record<string, unknown>;
  /** The config's `status:` section (`visibility: private | channel`; the bot's default is private). */
  status?: { visibility?: "private" | "channel" };
  /**
   * The config's bench.weightScale: the Hub's weight files are 1/N of the real model's (presets made with
   * `{ scale: N }`), and the bot's plans reason with their sizes × N. Default: not set (1).
   */
  weightScale?: number;
  /**
   * Socket Mode: the bot gets SLACK_APP_TOKEN (and no signing secret) and connects to the Slack emulator
   * over a WebSocket; commands, events and clicks arrive as envelopes. Default: HTTP (a Request URL).
   */
  socketMode?: boolean;
  /**
   * The simulated Slack allows N times Slack's rate limits and the bot's config says so
   * (bench.slackRateScale), so the bot paces its calls N times as fast: only the code under test decides
   * how a thread is paced, at N times the speed. Default 1: Slack's limits, for tests of pacing itself.
   */
  slackRateScale?: number;
  /**
   * How fast every host's simulated engines load and decode (both engines' base settings, under any
   * fault a test sets): QUICK_ENGINES for tests that only need a swap to pass through its steps. Default:
   * the sims' own (SGLANG.md: loadSeconds 1.5, msPerToken 2), which the benchmarks and the demo show.
   */
  engineTiming?: { loadSeconds?: number; msPerToken?: number };
}

/**
 * Engines as quick as a test of the swap's steps allows: a 0.5 s load (the health wait still polls it
 * several times) and 0.5 ms a token (a benchmark's eight single-stream prompts of 128 tokens take about
 * half a second, not two).
 */
export const QUICK_ENGINES = { loadSeconds: 0.5, msPerToken: 0.5 } as const;

/**
 * The bench of a test that only needs swaps to pass through their steps: Slack at 100× its limits on both
 * sides (the emulator's and the bot's pace) and QUICK_ENGINES. Tests of pacing or of an answer's length in
 * seconds leave it out.
 */
export const QUICK_BENCH = { slackRateScale: 100, engineTiming: QUICK_ENGINES } as const;

/**
 * The sims' own settings (SGLANG.md: a 1.5 s load, 2 ms a token): for tests whose client streams count on
 * an answer's length in seconds (4,000 tokens: 8 s in flight when a drain begins).
 */
export const SIM_ENGINES = {} as const;

export interface SpawnBotOptions {
  /** The CLI's role: `start` (bot and worker, the default), `bot` or `worker`. */
  role?: "start" | "bot" | "worker";
  /** LOG_LEVEL of the child (default debug). */
  logLevel?: string;
  /** Flags for node itself, before the script (e.g. `--cpu-prof`, `--cpu-prof-dir=…`). */
  nodeArgs?: string[];
  /** More environment for the child (e.g. `MODELSWAP_WATCH_CONFIG: "false"`). */
  env?: Record<string, string>;
}

export interface ChildBot {
  pid: number;
  /** The port its Bolt app listens on (none for the worker role). */
  port: number;
  logPath: string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface BenchHost {
  spec: BenchHostSpec;
  sim: SimGpuHost;
  servingPort: number;
  unit: string;
  /** The host's front door, when its spec has one: clients send requests to `frontDoor.url`. */
  frontDoor?: BenchHaproxy;
}

/**
 * The whole test bench: real redis-server and sshd, the simulated Slack, Hub and GPU hosts, and the
 * config and environment that point the real bot at them. Tests and `npm run demo` both use it.
 */
export class Bench {
  readonly hosts = new Map<string, BenchHost>();
  private bots: RunningModelswap[] = [];
  private children: ChildProcess[] = [];
  private childBots: ChildBot[] = [];
  private spawned = 0;
  private silentServers: Server[] = [];
  private readonly relays = new Map<string, TcpHold>();
  private haproxies: BenchHaproxy[] = [];
  configPath = "";
  env: Record<string, string> = {};
  /** The bot's app-level token (Socket Mode benches only). */
  appToken: string | undefined;
  /** The engine upstream every host's `engineUpstream` points at: a real bare git repository. */
  upstream: EngineUpstream = { url: "", path: "", commits: {} };
  /** The simulated vLLM upstream, when a host has vLLM (BenchHostSpec.vllm). */
  vllmUpstream: EngineUpstream = { url: "", path: "", commits: {} };

  constructor(
    readonly dir: string,
    readonly redis: BenchRedis,
    readonly sshd: BenchSshd,
    readonly slack: SlackEmulator,
    readonly hub: SimHub,
    readonly signingSecret: string,
    readonly botToken: string,
    private readonly options: BenchOptions,
  ) {}

  host(name: string): BenchHost {
    const host = this.hosts.get(name);
    if (host === undefined) throw new Error(`the bench has no host ${name}`);
    return host;
  }

  /** Loads the bench's config as the bot would (through the real zod schema). */
  async config(): Promise<Config> {
    return await loadConfig(this.env);
  }

  /**
   * Changes the config file as an editor saves it (`writeConfig`): `change` edits the parsed YAML in place.
   * A host for it to add comes from `addHost(spec)`, which starts that host's simulation.
   */
  // biome-ignore lint/suspicious/noExplicitAny: a test edits the YAML as a person would, whatever its shape
  async editConfig(change: (config: any) => void): Promise<void> {
    const config: unknown = parse(await readFile(this.configPath, "utf8"));
    change(config);
    await this.writeConfig(stringify(config));
  }

  /** Replaces the config file's text as editors save: written beside it, then renamed over it. */
  async writeConfig(text: string): Promise<void> {
    const temp = join(dirname(this.configPath), `.modelswap.yaml.${randomBytes(4).toString("hex")}.tmp`);
    await writeFile(temp, text);
    await rename(temp, this.configPath);
  }

  /** Starts the real bot in this process, pointed at the bench, and tells the Slack emulator where it is. */
  async startBot(
    roles: Roles = { bot: true, worker: true },
    extra: { recipes?: readonly CatalogueRecipe[] } = {},
  ): Promise<RunningModelswap> {
    const port = await freePort();
    this.env.PORT = String(port);
    const config = await this.config();
    const bot = await startModelswap({ config, roles, log: this.logger(config), ...extra });
    this.bots.push(bot);
    // in Socket Mode the bot connected itself (startModelswap resolves after Slack's hello)
    if (roles.bot && this.appToken === undefined)
      this.slack.setBotEndpoint(`http://127.0.0.1:${port}/slack/events`);
    return bot;
  }

  /**
   * Starts the real `modelswap start` as a separate process (for tests that kill it: SIGKILL is a
   * crash, nothing is cleaned up). Its log goes to `<dir>/bot-<n>.log`. Benchmarks pick the role
   * (`bot` alone has no worker), the log level, and flags for node itself (e.g. `--cpu-prof`).
   */
  async spawnBot(options: SpawnBotOptions = {}): Promise<ChildBot> {
    // numbered before anything is awaited: children spawned at once get logs of their own
    const logPath = join(this.dir, `bot-${++this.spawned}.log`);
    const port = await freePort();
    const role = options.role ?? "start";
    const out = await open(logPath, "a");
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), modelswapBin().path, role], {
      env: {
        ...process.env,
        ...modelswapBin().env,
        ...this.env,
        PORT: String(port),
        LOG_LEVEL: options.logLevel ?? "debug",
        ...options.env,
      },
      stdio: ["ignore", out.fd, out.fd],
    });
    // the child has its own copy of the log's descriptor now
    await out.close();
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    this.children.push(child);
    const lastSocket = this.slack.socketConnections().at(-1)?.id ?? 0;
    // The worker alone serves no HTTP: it is up once it has loaded (no port to wait for).
    if (role === "worker") await new Promise((resolve) => setTimeout(resolve, 2000));
    // tsx compiles the bot's modules as it starts: on two loaded cores that alone has taken half a minute
    else
      await waitForPort(port, "the modelswap child process", 60_000).catch(async (error: Error) => {
        // what the child said is why it never listened: the error carries its log's last lines
        const said = await readFile(logPath, "utf8").catch(() => "");
        throw new Error(
          `${error.message}; its log (${logPath}) ends:\n${said.split("\n").slice(-15).join("\n")}`,
        );
      });
    if (role !== "worker" && this.appToken !== undefined)
      await this.slack.waitForSocket({ after: lastSocket, timeoutMs: 30_000 });
    else if (role !== "worker") this.slack.setBotEndpoint(`http://127.0.0.1:${port}/slack/events`);
    const bot: ChildBot = {
      pid: child.pid ?? 0,
      port,
      logPath,
      kill: async (signal: NodeJS.Signals = "SIGKILL") => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        await exited;
        await out.close().catch(() => undefined);
      },
    };
    this.childBots.push(bot);
    return bot;
  }

  /** SIGKILLs every `modelswap` child process still running (a crash: nothing is cleaned up). */
  async killChildren(): Promise<void> {
    await Promise.all(this.childBots.splice(0).map((bot) => bot.kill("SIGKILL")));
  }

  /** Stops every bot this bench started (their Redis state stays). */
  async stopBots(): Promise<void> {
    for (const bot of this.bots.splice(0)) await bot.stop();
  }

  /**
   * Jobs ever added to the queues a command fills (commands and swaps; the monitor's and the reporter's
   * jobs come on their own), for "nothing was enqueued" checks.
   */
  async queuedJobCount(): Promise<number> {
    const { Redis } = await import("ioredis");
    const redis = new Redis(this.redis.url);
    try {
      const keys = ["{modelswap}:commands:id", "{modelswap}:swaps:id"];
      let total = 0;
      for (const key of keys) total += Number((await redis.get(key)) ?? 0);
      return total;
    } finally {
      redis.disconnect();
    }
  }

  async stop(): Promise<void> {
    for (const bot of this.bots.splice(0)) await bot.stop().catch(() => undefined);
    for (const child of this.children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
    // light hosts share a sandbox: each is stopped once
    for (const sim of new Set([...this.hosts.values()].map((h) => h.sim)))
      await sim.stop().catch(() => undefined);
    for (const server of this.silentServers) server.close();
    for (const relay of this.relays.values()) await relay.close().catch(() => undefined);
    for (const haproxy of this.haproxies.splice(0)) await haproxy.stop().catch(() => undefined);
    await this.slack.stop();
    await this.hub.stop();
    await this.sshd.stop();
    await this.redis.stop();
    if (process.env.MODELSWAP_KEEP_BENCH === undefined) await rm(this.dir, { recursive: true, force: true });
  }

  private logger(config: Config): Logger {
    if (this.options.logTo === "silent") return createLogger({ level: "silent" });
    return createLogger({
      level: "debug",
      secrets: configSecrets(config), // what the real bot redacts (src/main.ts)
      destination: pino.destination({ dest: join(this.dir, "bot.log"), sync: false, mkdir: true }),
    });
  }

  /**
   * Starts a simulated host and returns its entry for the config's `hosts:` (startBench does this for
   * each host it is given; a test adds one to a running bot's config with `editConfig`).
   */
  async addHost(spec: BenchHostSpec): Promise<Record<string, unknown>> {
    if (spec.sandboxOf !== undefined) return await this.addLightHost(spec, this.host(spec.sandboxOf));
    const root = join(this.dir, "hosts", spec.name);
    const sim = await createSimGpuHost({
      root,
      name: spec.name,
      gpus: spec.gpus ?? "8x-rtx-pro-6000-blackwell",
      hubUrl: this.hub.url,
      hostMemGiB: spec.hostMemGiB ?? 1024,
      engine: spec.engine,
      hubCli: spec.hubCli,
      ...(this.options.engineTiming === undefined
        ? {}
        : { engineBase: { sglang: this.options.engineTiming, vllm: this.options.engineTiming } }),
    });
    const servingPort = await freePort();
    const unit = (spec.serving !== false && spec.serving?.unit) || `sglang-${spec.name}.service`;
    this.hosts.set(spec.name, { spec, sim, servingPort, unit });
    for (const [name, value] of Object.entries(spec.faults ?? {})) await sim.setFault(name, value);
    if (spec.diskFreeBytes !== undefined) await sim.setFault("diskFreeBytes", spec.diskFreeBytes);
    if (spec.diskSizeBytes !== undefined) await sim.setFault("diskSizeBytes", spec.diskSizeBytes);
    if (spec.serving !== false) await this.serve(spec, sim, servingPort, unit);

    const frontDoor = await this.frontDoor(spec, root, servingPort);
    if (spec.vllm !== undefined) await installVllm(sim.root);
    const common = {
      ...(frontDoor === undefined ? {} : frontDoor),
      name: spec.name,
      modelsDir: sim.modelsDir,
      engineSourceDir: sim.engineSourceDir,
      venv: sim.venvDir,
      ...(spec.vllm === "only"
        ? { engine: "vllm", engineUpstream: this.vllmUpstream.url }
        : { engineUpstream: this.upstream.url }),
      ...(spec.vllm === "also"
        ? { engines: { vllm: { venv: sim.venvDir, upstream: this.vllmUpstream.url } } }
        : {}),
      unitDir: sim.unitDir,
      currentUnit: unit,
      servingPort,
      ...(spec.sudo === true ? { sudo: true } : {}),
      commandTimeoutSeconds: spec.commandTimeoutSeconds ?? this.options.commandTimeoutSeconds ?? 10,
      enginePatches:
        spec.enginePatch === true
          ? [await makeEnginePatch(this.upstream.url, join(root, "patches", "0001-sm120-support.patch"))]
          : [],
      ...spec.config,
    };
    if (spec.transport === "local") return { ...common, local: true, extraPath: [sim.binDir] };
    const keyDir = this.options.secrets?.keyDir;
    const login = await this.sshd.authorize(
      { PATH: `${sim.binDir}:/usr/local/bin:/usr/bin:/bin`, MODELSWAP_SANDBOX: sim.root },
      keyDir === undefined ? {} : { keyDir: resolvePath(this.dir, keyDir) },
    );
    let port = this.sshd.port;
    let hostKeySha256 = this.sshd.hostKeySha256();
    if (spec.reach === "refused") port = await freePort();
    if (spec.reach === "silent") port = await this.silentPort();
    if (spec.reach === "relay") {
      const relay = await startTcpHold(port);
      this.relays.set(spec.name, relay);
      port = relay.port;
    }
    if (spec.reach === "stale-key") hostKeySha256 = await unrelatedFingerprint(this.dir);
    return {
      ...common,
      ssh: {
        address: "127.0.0.1",
        port,
        user: login.user,
        privateKeyPath: login.privateKeyPath,
        hostKeySha256,
        connectTimeoutSeconds: this.options.connectTimeoutSeconds ?? 3,
        keepaliveSeconds: 5,
      },
    };
  }

  /** Starts the host's HAProxy (spec.frontDoor) and returns its config keys. */
  private async frontDoor(
    spec: BenchHostSpec,
    root: string,
    servingPort: number,
  ): Promise<Record<string, unknown> | undefined> {
    if (spec.frontDoor === undefined) return undefined;
    const o = spec.frontDoor === true ? {} : spec.frontDoor;
    const holdSeconds = o.holdSeconds ?? 60;
    // nothing listens on a fresh free port: connections to it are refused, as to port 1 on a real host
    const closedPort = await freePort();
    const standbyPort = o.standby === true ? await freePort() : undefined;
    const haproxy = await startHaproxy(join(root, "haproxy"), {
      retries: holdSeconds,
      servers: [
        { name: "blue", port: servingPort },
        ...(standbyPort === undefined ? [] : [{ name: "green", port: standbyPort, disabled: true }]),
        { name: "hold", port: closedPort, disabled: true },
      ],
    });
    this.haproxies.push(haproxy);
    this.host(spec.name).frontDoor = haproxy;
    return {
      ...(o.drainSeconds === undefined ? {} : { drainSeconds: o.drainSeconds }),
      frontDoor: {
        socket: haproxy.socket,
        backend: haproxy.backend,
        server: "blue",
        hold: "hold",
        holdSeconds,
        ...(standbyPort === undefined ? {} : { standby: { server: "green", port: standbyPort } }),
        port: Number(new URL(haproxy.url).port),
      },
    };
  }

  /** A host that is another one's sandbox under a new name: only an SSH key of its own. */
  private async addLightHost(spec: BenchHostSpec, base: BenchHost): Promise<Record<string, unknown>> {
    const { sim, servingPort, unit } = base;
    this.hosts.set(spec.name, { spec, sim, servingPort, unit });
    const login = await this.sshd.authorize({
      PATH: `${sim.binDir}:/usr/local/bin:/usr/bin:/bin`,
      MODELSWAP_SANDBOX: sim.root,
    });
    return {
      name: spec.name,
      modelsDir: sim.modelsDir,
      engineSourceDir: sim.engineSourceDir,
      venv: sim.venvDir,
      engineUpstream: this.upstream.url,
      unitDir: sim.unitDir,
      currentUnit: unit,
      servingPort,
      commandTimeoutSeconds: this.options.commandTimeoutSeconds ?? 10,
      ssh: {
        address: "127.0.0.1",
        port: this.sshd.port,
        user: login.user,
        privateKeyPath: login.privateKeyPath,
        hostKeySha256: this.sshd.hostKeySha256(),
        connectTimeoutSeconds: this.options.connectTimeoutSeconds ?? 3,
        keepaliveSeconds: 5,
      },
    };
  }

  private async serve(spec: BenchHostSpec, sim: SimGpuHost, port: number, unit: string): Promise<void> {
    const model = makeModel(
      spec.serving === false || spec.serving === undefined ? "llama-bf16-small" : spec.serving.preset,
    );
    const modelDir = join(sim.modelsDir, model.id);
    for (const file of model.files) {
      if (file.content === undefined) continue;
      const path = join(modelDir, file.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.content);
    }
    const gpuCount = spec.serving === false ? 8 : (spec.serving?.tp ?? (spec.gpus === "h200-1gpu" ? 1 : 8));
    const memFraction =
      spec.serving === false || spec.serving?.memFraction === undefined
        ? ""
        : ` --mem-fraction-static ${spec.serving.memFraction}`;
    await sim.installUnit(
      unit,
      [
        "[Unit]",
        `Description=SGLang serving ${model.id}`,
        "After=network-online.target",
        "",
        "[Service]",
        `ExecStart=${sim.venvDir}/bin/python -m sglang.launch_server --model-path ${modelDir} --served-model-name ${model.id} --host 127.0.0.1 --port ${port} --tp-size ${gpuCount}${memFraction}`,
        "Restart=on-failure",
        "RestartSec=5",
        "TimeoutStartSec=900",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
      ].join("\n"),
    );
    const enabled = await sim.systemctl("enable", "--now", unit);
    if (enabled.code !== 0)
      throw new Error(`bench: could not start ${unit} on ${spec.name}: ${enabled.stderr}`);
    if (spec.waitHealthy ?? spec.faults === undefined)
      await waitHealthy(port, `${spec.name}'s ${unit}`).catch(async (error: Error) => {
        // a timeout alone says nothing (the quick bench's fault campaign once timed out on door-1's unit):
        // what the unit's state and its journal's end were when the wait gave up does
        throw new Error(`${error.message}\n${await unitReport(sim, unit)}`);
      });
  }

  /** The TCP relay a `reach: "relay"` host is reached through (hold, cut, mend its path mid-test). */
  relay(host: string): TcpHold {
    const relay = this.relays.get(host);
    if (relay === undefined) throw new Error(`host ${host} is not reached through a relay (reach: "relay")`);
    return relay;
  }

  private async silentPort(): Promise<number> {
    const server = createServer(() => undefined);
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    this.silentServers.push(server);
    return port;
  }
}

/** The config's bench: section, from the options that set it (none: production's defaults). */
function benchSection(options: BenchOptions): { bench?: Record<string, number> } {
  const bench = {
    ...(options.weightScale === undefined ? {} : { weightScale: options.weightScale }),
    ...(options.slackRateScale === undefined ? {} : { slackRateScale: options.slackRateScale }),
  };
  return Object.keys(bench).length === 0 ? {} : { bench };
}

async function waitHealthy(port: number, what: string, timeoutMs = 30_000): Promise<void> {
  await until(
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/health`)).status === 200;
      } catch {
        return false; // not listening yet
      }
    },
    { what: `bench: ${what} to answer /health`, timeoutMs, intervalMs: 100 },
  );
}

/** The unit's state and its journal's last lines, for a failed wait's message. */
async function unitReport(sim: SimGpuHost, unit: string): Promise<string> {
  const state = await sim.unitState(unit).catch(() => undefined);
  const journal = (await sim.journal(unit)).split("\n").slice(-20).join("\n");
  const said =
    state === undefined
      ? "its state could not be read"
      : `${state.activeState}/${state.subState} (result ${state.result}, main pid ${state.mainPid}, restarts ${state.nRestarts})`;
  return `${unit}: ${said}; journal's end:\n${journal || "(empty)"}`;
}

async function unrelatedFingerprint(dir: string): Promise<string> {
  const path = join(dir, `old-host-key-${randomBytes(4).toString("hex")}`);
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path]);
  const { stdout } = await run("ssh-keygen", ["-lf", `${path}.pub`]);
  return stdout.split(" ")[1] ?? "";
}

/** Starts the bench: one call, everything real or simulated that the bot talks to. */
export async function startBench(options: BenchOptions = {}): Promise<Bench> {
  const dir = await mkdtemp(join(tmpdir(), "modelswap-bench-"));
  const signingSecret = options.secrets?.signingSecret ?? randomBytes(16).toString("hex");
  const botToken = options.secrets?.botToken ?? `xoxb-bench-${randomBytes(8).toString("hex")}`;
  const hfToken = options.secrets?.hfToken;
  const appToken = options.socketMode === true ? newAppToken("A0MODELSWP") : undefined;
  const [redis, sshd, slack, hub, upstream] = await Promise.all([
    startRedis(join(dir, "redis")),
    startSshd(join(dir, "sshd")),
    startSlackEmulator({
      botToken,
      signingSecret,
      users: [
        { id: USERS.alice, name: "alice" },
        { id: USERS.bob, name: "bob" },
        { id: USERS.carol, name: "carol" },
        { id: USERS.mallory, name: "mallory" },
        { id: USERS.dave, name: "dave" },
        { id: USERS.erin, name: "erin" },
      ],
      userGroups: [
        { id: MLOPS_GROUP, handle: "mlops", users: [USERS.carol] },
        { id: APPROVERS_GROUP, handle: "llm-approvers", users: [...(options.approverGroup ?? [])] },
      ],
      channels: [{ id: CHANNEL, name: "llm-ops" }],
      ...(appToken === undefined ? {} : { appToken }),
    }),
    startSimHub(hfToken === undefined ? {} : { tokens: [hfToken] }),
    createEngineUpstream(join(dir, "upstream"), [...DEFAULT_ENGINE_REFS, ...(options.engineRefs ?? [])]),
  ]);
  if (options.slackRateScale !== undefined) slack.setRateLimits({ scale: options.slackRateScale });
  const bench = new Bench(dir, redis, sshd, slack, hub, signingSecret, botToken, options);
  bench.upstream = upstream;
  if ((options.hosts ?? []).some((h) => h.vllm !== undefined))
    bench.vllmUpstream = await createVllmUpstream(join(dir, "vllm-upstream"));
  bench.appToken = appToken;
  try {
    const hostSpecs = options.hosts ?? [{ name: "gpu-1" }];
    // light hosts (sandboxOf) need their sandbox's host first; the config keeps the given order
    const own = hostSpecs.filter((spec) => spec.sandboxOf === undefined);
    const added = new Map(await Promise.all(own.map(async (s) => [s, await bench.addHost(s)] as const)));
    const light = hostSpecs.filter((spec) => spec.sandboxOf !== undefined);
    for (const [spec, host] of await Promise.all(
      light.map(async (s) => [s, await bench.addHost(s)] as const),
    ))
      added.set(spec, host);
    const hosts = hostSpecs.map((spec) => added.get(spec));
    const config = {
      slack: { channel: CHANNEL },
      requesters: { users: [USERS.alice, USERS.dave], groups: [MLOPS_GROUP] },
      approvers: {
        users: [USERS.bob, USERS.dave],
        ...(options.approverGroup === undefined ? {} : { groups: [APPROVERS_GROUP] }),
      },
      ...(options.access === undefined ? {} : { access: options.access }),
      health: { intervalSeconds: 3600, failureThreshold: 3, ...options.health },
      approvals: options.approvals ?? {},
      // no baseline probe unless a test asks (swaps.baseline): it would add a benchmark run to every first swap
      swaps: { pollSeconds: 0.5, cardUpdateSeconds: 2, baseline: "off", ...options.swaps },
      ...(options.enginePolicy === undefined ? {} : { engine: options.enginePolicy }),
      ...(options.hubPolicy === undefined ? {} : { hub: options.hubPolicy }),
      ...(options.models === undefined ? {} : { models: options.models }),
      ...(options.groups === undefined ? {} : { groups: options.groups }),
      ...(options.recipes === undefined ? {} : { recipes: options.recipes }),
      ...(options.status === undefined ? {} : { status: options.status }),
      ...benchSection(options),
      hosts,
    };
    bench.configPath = join(dir, "modelswap.yaml");
    await writeFile(bench.configPath, stringify(config));
    bench.env = {
      SLACK_BOT_TOKEN: botToken,
      // a Socket Mode app needs no signing secret: nothing it receives is signed
      ...(appToken === undefined ? { SLACK_SIGNING_SECRET: signingSecret } : { SLACK_APP_TOKEN: appToken }),
      SLACK_API_URL: slack.apiUrl,
      REDIS_URL: redis.url,
      HF_ENDPOINT: hub.url,
      LOG_LEVEL: "debug",
      MODELSWAP_CONFIG: bench.configPath,
      ...(hfToken === undefined ? {} : { HF_TOKEN: hfToken }),
    };
    return bench;
  } catch (error) {
    await bench.stop();
    throw error;
  }
}
