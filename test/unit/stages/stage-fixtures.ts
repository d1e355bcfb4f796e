import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { preflightStage } from "../../../jobs/swap/stages/preflight.ts";
import type { GpuInfo } from "../../../src/gpu/nvidia-smi.ts";
import { type ModelInfo, summarize } from "../../../src/hub/types.ts";
import { modelFacts } from "../../../src/plan/model-facts.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import type { StoredSwapEvent, SwapEventType } from "../../../src/swap/swap-events.ts";
import { newStages, type SwapRecord } from "../../../src/swap/swap-record.ts";
import { BUILTIN_FLAGS, type FlagSpec, formatHelp } from "../../../testbench/gpu-host/shims/sglang-flags.mjs";
import type { ModelPreset } from "../../../testbench/hub/index.ts";
import { gpusOf, modelInfoOf } from "../plan-fixtures.ts";
import {
  type Answer,
  type Fake,
  type FakeHost,
  type FakeOptions,
  fakeContext,
} from "./fake-stage-context.ts";

/**
 * What the stage tests share: a GPU host scripted in the real output formats of the commands preflight
 * runs (src/plan/read-host-facts.ts), a swap planned by the real preflight, and an engine build's
 * `--help` in argparse's format.
 */

export const GiB = 1024 ** 3;

/** The captured `nvidia-smi --query-gpu=… --format=csv,noheader,nounits` of a real H200 host. */
export function h200QueryCsv(): string {
  return readFileSync(
    new URL("../../fixtures/gpu-host/h200-1gpu/nvidia-smi-query.csv", import.meta.url),
    "utf8",
  );
}

/** The same query's output for a simulated GPU set, in the capture's format (", " between values). */
export function gpuQueryCsv(set: string): string {
  const value = (v: number | null) => (v === null ? "[N/A]" : String(v));
  const line = (g: GpuInfo) =>
    [
      g.index,
      g.name,
      g.uuid,
      g.memoryTotalMiB,
      g.memoryUsedMiB,
      g.memoryFreeMiB,
      value(g.utilizationPct),
      value(g.temperatureC),
      value(g.powerDrawW),
      `${g.computeCapability.major}.${g.computeCapability.minor}`,
      g.driverVersion,
    ].join(", ");
  return `${gpusOf(set).map(line).join("\n")}\n`;
}

export const OLD_UNIT_NAME = "sglang-old.service";
export const OLD_UNIT_PATH = `/etc/systemd/system/${OLD_UNIT_NAME}`;
export const OLD_MODEL_DIR = "/srv/models/meta-llama--Llama-3.2-1B-Instruct--4e20de362430";
export const OLD_UNIT = `[Unit]
Description=SGLang meta-llama/Llama-3.2-1B-Instruct (modelswap swap sw-20261120-0001)
After=network-online.target

[Service]
Environment=HF_HUB_OFFLINE=1
ExecStart=/srv/venv/bin/python -m sglang.launch_server \\
  --model-path ${OLD_MODEL_DIR} \\
  --served-model-name meta-llama/Llama-3.2-1B-Instruct \\
  --host 127.0.0.1 \\
  --port 30000 \\
  --tp-size 1
Restart=on-failure

[Install]
WantedBy=multi-user.target
`;

export interface HostShape {
  /** nvidia-smi's query output, or its whole answer (an exit status, an error thrown). */
  gpus?: string | Answer;
  freeDiskBytes?: number;
  /** Bytes of this model already in its directory. */
  bytesOnDisk?: number;
  memoryBytes?: number;
  venvOk?: boolean;
  hubCli?: "hf" | "huggingface-cli" | "none";
  /** The serving unit (default sglang-old.service, loaded and active, with OLD_UNIT as its file). */
  unit?: { name: string; text: string; active?: boolean };
  /** What `git ls-remote` of the engine upstream prints (default: UPSTREAM_REFS). */
  upstreamRefs?: string;
}

/** The engine upstream's branches and tags as `git ls-remote --heads --tags` prints them (an annotated tag peeled). */
export const ENGINE_MAIN_COMMIT = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
export const UPSTREAM_REFS = [
  `${ENGINE_MAIN_COMMIT}\trefs/heads/main`,
  "0f0e0d0c0b0a09080706050403020100ffeeddcc\trefs/tags/v0.5.2",
  "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e\trefs/tags/v0.5.2^{}",
  "",
].join("\n");

/**
 * Answers every command of preflight's host read, as the real tools print: nvidia-smi's CSV, `df -B1
 * --output=avail | tail -n 1` then the bytes already there, `free -b`'s total, `python --version`,
 * `command -v hf`, `systemctl show` of the serving unit followed by its unit file, and the engine
 * upstream's `git ls-remote`.
 */
export function scriptGpuHost(host: FakeHost, shape: HostShape = {}): FakeHost {
  host.on(/^git ls-remote /, { stdout: shape.upstreamRefs ?? UPSTREAM_REFS });
  const gpus = shape.gpus ?? gpuQueryCsv("8x-rtx-pro-6000-blackwell");
  host.on(/^nvidia-smi --query-gpu=/, typeof gpus === "string" ? { stdout: gpus } : gpus);
  host.on(/df -B1 --output=avail/, {
    stdout: `${shape.freeDiskBytes ?? 7.1e12}\n${shape.bytesOnDisk ?? 0}\n`,
  });
  host.on(/^free -b/, { stdout: `${shape.memoryBytes ?? 2048 * GiB}\n` });
  host.on(
    /bin\/python --version/,
    shape.venvOk === false ? { code: 1, stdout: "" } : { stdout: "Python 3.12.3\n" },
  );
  const cli = shape.hubCli ?? "hf";
  host.on(/command -v hf/, { stdout: cli === "none" ? "" : `/usr/local/bin/${cli}\n` });
  const unit = shape.unit ?? { name: OLD_UNIT_NAME, text: OLD_UNIT };
  host.on(new RegExp(`systemctl show ${unit.name.replace(/\./g, "\\.")} --property=LoadState`), {
    stdout: [
      `LoadState=${unit.text === "" ? "not-found" : "loaded"}`,
      `ActiveState=${unit.active === false ? "inactive" : "active"}`,
      `FragmentPath=${unit.text === "" ? "" : `/etc/systemd/system/${unit.name}`}`,
      "---unit---",
      unit.text,
    ].join("\n"),
  });
  return host;
}

/** A swap whose resolve is done: the record's model summary and facts of a real preset. */
export function resolvedRecord(
  info: ModelInfo,
  over: Partial<SwapRecord["request"]> = {},
): Partial<SwapRecord> {
  const stages = {
    ...newStages(),
    resolve: { state: "done" as const, detail: `commit ${info.sha.slice(0, 7)}` },
  };
  return {
    step: "preflight",
    stages,
    request: {
      model: { repo: info.repo, revision: info.revision },
      dryRun: false,
      engineRef: "main",
      ...over,
    },
    model: summarize(info),
    facts: modelFacts(info),
  };
}

/** The Qwen3.5 NVFP4 checkpoint at its real size (223 GB, 11 shards of up to 12.1 GB). */
export const QWEN = (): ModelInfo => modelInfoOf("qwen3.5-moe-nvfp4");

export interface PlannedOptions extends FakeOptions {
  preset?: ModelPreset;
  shape?: HostShape;
}

/**
 * A swap the real preflight planned and put up for approval, on a fake host scripted to pass every
 * check: what the prepare step starts from. The host's command log is cleared after preflight.
 */
export async function plannedSwap(options: PlannedOptions = {}): Promise<Fake> {
  const info = modelInfoOf(options.preset ?? "qwen3.5-moe-nvfp4");
  const fake = fakeContext({ ...options, record: { ...resolvedRecord(info), ...options.record } });
  scriptGpuHost(fake.host, options.shape);
  expect(await preflightStage(fake.ctx)).toEqual({ next: "prepare" });
  fake.swap.to.stepTo("prepare");
  fake.host.commands.length = 0;
  return fake;
}

/**
 * The fake's context with every startTask call logged in order (FakeHost.started keeps only the last one
 * per directory, so a second start would go unseen), and a start leaving its task running, as the real
 * startDetached does by removing the old exit file (the fake keeps a dead or exited status as it was).
 */
export function countingStarts(fake: Fake): { ctx: StageContext; starts: { dir: string; script: string }[] } {
  const starts: { dir: string; script: string }[] = [];
  const host = fake.ctx.host;
  const ctx: StageContext = {
    ...fake.ctx,
    host: {
      ...host,
      startTask: async (dir, script, secrets) => {
        starts.push({ dir, script: script.text });
        fake.host.status.set(dir, { state: "running", exitCode: undefined, logTail: [] });
        await host.startTask(dir, script, secrets);
      },
    },
  };
  return { ctx, starts };
}

/**
 * `python -m sglang.launch_server --help` of an engine build, in argparse's format: the simulated
 * engine's current upstream flags, less `omit`, with `rename` giving a flag an older spelling.
 */
export function engineHelp(options: { omit?: string[]; rename?: Record<string, string> } = {}): string {
  const omit = new Set(options.omit ?? []);
  const specs: FlagSpec[] = BUILTIN_FLAGS.filter((s) => !s.flags.some((f) => omit.has(f))).map((s) => ({
    ...s,
    flags: s.flags.map((f) => options.rename?.[f] ?? f),
  }));
  return formatHelp("launch_server.py", specs);
}

/** What a finished build leaves in its task directory. */
export function finishBuild(
  host: FakeHost,
  dir: string,
  build: {
    help?: string;
    commit?: string;
    version?: string;
    exitCode?: number;
  } = {},
): void {
  const exitCode = build.exitCode ?? 0;
  host.status.set(dir, {
    state: "exited",
    exitCode,
    logTail: exitCode === 0 ? ["modelswap: built"] : ["ERROR: pip install failed"],
  });
  host.files.set(`${dir}/commit`, `${build.commit ?? "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"}\n`);
  host.files.set(`${dir}/version`, `${build.version ?? "0.5.2"}\n`);
  host.files.set(`${dir}/help.txt`, build.help ?? engineHelp());
}

export function eventsOf<T extends SwapEventType>(
  fake: Fake,
  type: T,
): Extract<StoredSwapEvent, { type: T }>[] {
  return fake.events().filter((e): e is Extract<StoredSwapEvent, { type: T }> => e.type === type);
}

/** Commands that change a host's serving side (units, services): none may run before the switch. */
export const SERVING_CHANGES =
  /systemctl (start|stop|restart|enable|disable|daemon-reload|mask|kill)|\/etc\/systemd\/system\/.*(>|tee|cp|mv|install)|rm -rf/;
