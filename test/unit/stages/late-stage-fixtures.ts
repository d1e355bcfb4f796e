import { CodedError } from "../../../src/errors.ts";
import type { HostFrontDoor } from "../../../src/front-door/host-front-door.ts";
import type { ExecOptions, ExecResult } from "../../../src/host/transport.ts";
import { makePlan } from "../../../src/plan/make-plan.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import { newStages, type StageName, type SwapRecord } from "../../../src/swap/swap-record.ts";
import { hostFactsOf, planInput } from "../plan-fixtures.ts";
import { type Fake, type FakeOptions, fakeContext } from "./fake-stage-context.ts";

/*
 * Fixtures for the tests of the stages from the switch on (switch, health, sanity, benchmark, rollback,
 * finish): the seeds' swap — Kimi K2 out, Qwen3.5-397B NVFP4 in, on 8× RTX PRO 6000 Blackwell — as an
 * approved record, and the host's answers in their real formats (systemctl is-active + curl + journalctl
 * -o cat, SGLang's /generate, bench_serving's summary).
 */

export const RTX = "8x-rtx-pro-6000-blackwell";
export const OLD_UNIT = "sglang-kimi.service";
export const OLD_REPO = "moonshotai/Kimi-K2-Thinking";

/** The plan of the seeds' swap, as makePlan computes it; `servedNothing`: the host had no unit before. */
export function qwenPlan(options: { servedNothing?: boolean } = {}): SwapPlan {
  const input = planInput("qwen3.5-moe-nvfp4", RTX);
  if (options.servedNothing) {
    input.host = hostFactsOf(RTX, {
      currentUnit: { name: OLD_UNIT, exists: false, active: false, text: "", execStart: [] },
    });
  }
  return makePlan(input);
}

export const PLAN = qwenPlan();
export const NEW_UNIT = PLAN.unitName;
export const NEW_UNIT_PATH = `/etc/systemd/system/${NEW_UNIT}`;

/** The host's config section the way the plan fixtures describe the host. */
export const HOST = {
  modelsDir: "/models",
  venv: "/opt/sglang/.venv",
  engineSourceDir: "/opt/sglang",
  currentUnit: OLD_UNIT,
} as const;

/** An approved swap about to switch: every stage before the switch done. */
export function approvedRecord(plan: SwapPlan = PLAN, over: Partial<SwapRecord> = {}): Partial<SwapRecord> {
  const stages = newStages();
  for (const name of ["resolve", "preflight", "download", "build", "approval"] as StageName[]) {
    stages[name] = {
      state: "done",
      startedAt: "2026-12-01T10:00:00.000Z",
      finishedAt: "2026-12-01T11:00:00.000Z",
    };
  }
  return {
    id: "sw-20261201-0001",
    request: { model: { repo: plan.model.repo, revision: "main" }, dryRun: false, engineRef: "main" },
    step: "switch",
    stages,
    plan,
    planHash: "c0ffee",
    previous: { unit: OLD_UNIT, repo: OLD_REPO, engine: "sglang" },
    ...over,
  };
}

/** What a test says about the swap: the fake's options, and the plan (default: the seeds' swap). */
export type LateOptions = FakeOptions & { plan?: SwapPlan };

/** A fake context around an approved record of the seeds' swap (the record's fields, the host's, …). */
export function lateContext(options: LateOptions = {}): Fake {
  const { plan, ...rest } = options;
  return fakeContext({
    ...rest,
    record: approvedRecord(plan, options.record),
    host: { ...HOST, ...options.host },
  });
}

/** What a host that cannot be reached throws (the way src/host/ssh-transport.ts words it). */
export function unreachable(): CodedError {
  return new CodedError(
    "HOST_UNREACHABLE",
    "gpu-1 (10.0.0.7:22) is unreachable: ECONNREFUSED",
    "check that the host is up, that sshd listens on that address and port, and that no firewall blocks the bot",
  );
}

/** The time the fake clock starts at (FakeClock does not export it), and ISO times that many seconds before and after it. */
export const T0 = Date.parse("2026-12-01T12:00:00.000Z");
export const ago = (seconds: number) => new Date(T0 - seconds * 1000).toISOString();
export const later = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

// ---------------------------------------------------------------------------------------------------
// Health: what waitHealthy's one command prints — `systemctl is-active`, curl's http_code, then the
// journal (`journalctl -u <unit> -n 200 -o cat`).

/** The health poll of a unit (the command waitHealthy runs; it names the unit in all three parts). */
export const healthPoll = (unit: string) =>
  new RegExp(`^\\s*systemctl is-active ${unit.replaceAll(".", "\\.")} \\|\\| true[\\s\\S]*health_generate`);

/** The check after health: the new unit's MainPID, then what SGLang's /get_model_info says it serves. */
export const servesProbe = /systemctl show -p MainPID --value [\s\S]*get_model_info/;

export function servesAnswer(mainPid: number, modelPath: string): Partial<ExecResult> {
  return {
    stdout: `${mainPid}\n---info---\n${JSON.stringify({ model_path: modelPath, tokenizer_path: modelPath, is_generation: true })}`,
  };
}

export function healthAnswer(
  state: string,
  httpCode: string,
  journal: readonly string[],
  /** The unit's MainPID as the probe shows it; omitted, the probe prints none (an older host's answer). */
  mainPid?: number,
): Partial<ExecResult> {
  const pid = mainPid === undefined ? "" : `\n${mainPid}`;
  return { stdout: `${state}\n${httpCode}${pid}\n---journal---\n${journal.join("\n")}\n` };
}

const description = (unit: string) =>
  (unit === NEW_UNIT ? PLAN.unitText : "Description=SGLang Kimi K2")
    .split("\n")
    .find((l) => l.startsWith("Description="))
    ?.slice("Description=".length);

/** A start-up in progress, as SGLang logs it (the journal of a unit still loading its weights). */
export function loadingJournal(unit: string, shards = 4): string[] {
  return [
    `Started ${unit} - ${description(unit)}.`,
    "[2026-12-01 12:00:01] server_args=ServerArgs(model_path='/models/nvidia--Qwen3.5-397B-A17B-NVFP4--43da92d546ab', tokenizer_mode='auto', tp_size=8)",
    "[2026-12-01 12:00:01] Attention backend not specified. Use flashinfer backend by default.",
    "[2026-12-01 12:00:02 TP0] Init torch distributed begin.",
    "[2026-12-01 12:00:03 TP0] Init torch distributed ends. mem usage=0.57 GB",
    "[2026-12-01 12:00:03 TP0] Load weight begin. avail mem=94.67 GB",
    `Loading safetensors checkpoint shards:  ${String(Math.floor((shards / 19) * 100)).padStart(2)}% Completed | ${shards}/19 [00:41<02:34, 0.10it/s]`,
  ];
}

export function healthyJournal(unit: string): string[] {
  return [
    ...loadingJournal(unit, 19),
    "[2026-12-01 12:03:12 TP0] Load weight end. elapsed=189.50 s, type=Qwen3_5MoeForConditionalGeneration, quant=modelopt_fp4, quant_algo=NVFP4, dtype=torch.bfloat16, avail mem=66.80 GB, mem usage=27.87 GB.",
    "[2026-12-01 12:03:13 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 2815549, K size: 22.22 GB, V size: 22.22 GB",
    "[2026-12-01 12:03:55] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
    '[2026-12-01 12:03:56] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
    "[2026-12-01 12:03:56] The server is fired up and ready to roll!",
  ];
}

export const OOM_LINE =
  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 3 has a total capacity of 95.59 GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has 94.06 GiB memory in use.";

const SRC = "/opt/sglang/python/sglang";

/** A scheduler that ran out of GPU memory while loading, and systemd's lines after it. */
export function oomJournal(unit: string): string[] {
  return [
    ...loadingJournal(unit, 7),
    "[2026-12-01 12:01:12 TP3] Scheduler hit an exception: Traceback (most recent call last):",
    `  File "${SRC}/srt/managers/scheduler.py", line 2968, in run_scheduler_process`,
    "    scheduler = Scheduler(",
    `  File "${SRC}/srt/managers/scheduler.py", line 331, in __init__`,
    "    self.tp_worker = TpModelWorker(",
    `  File "${SRC}/srt/managers/tp_worker.py", line 95, in __init__`,
    "    self._model_runner = ModelRunner(",
    `  File "${SRC}/srt/model_executor/model_runner.py", line 287, in __init__`,
    "    self.initialize(min_per_gpu_memory)",
    `  File "${SRC}/srt/model_executor/model_runner.py", line 372, in initialize`,
    "    self.load_model()",
    `  File "${SRC}/srt/model_executor/model_runner.py", line 812, in load_model`,
    "    self.model = get_model(",
    `  File "${SRC}/srt/model_loader/__init__.py", line 28, in get_model`,
    "    return loader.load_model(",
    `  File "${SRC}/srt/model_loader/loader.py", line 641, in load_model`,
    "    self.load_weights_and_postprocess(",
    `  File "${SRC}/srt/model_loader/loader.py", line 673, in load_weights_and_postprocess`,
    "    model.load_weights(weights)",
    `  File "${SRC}/srt/models/qwen3_5_moe.py", line 1187, in load_weights`,
    "    weight_loader(param, loaded_weight, shard_id)",
    `  File "/opt/sglang/.venv/lib/python3.12/site-packages/torch/utils/_device.py", line 104, in __torch_function__`,
    "    return func(*args, **kwargs)",
    OOM_LINE,
    "[2026-12-01 12:01:12] Received sigquit from a child process. It usually means the child failed.",
    `${unit}: Main process exited, code=exited, status=1/FAILURE`,
    `${unit}: Failed with result 'exit-code'.`,
  ];
}

// ---------------------------------------------------------------------------------------------------
// Sanity: SGLang's native /generate answers (curl's body, then the status mark the sanity check adds).

const MARK = "\n__modelswap_http_status__=";

type Token = [text: string, id: number, logprob: number | null];

/** A /generate answer as SGLang returns it, from (text, id, logprob) tokens, with curl's status mark. */
export function generated(tokens: readonly Token[], status = 200): Partial<ExecResult> {
  const body = {
    text: tokens.map((t) => t[0]).join(""),
    output_ids: tokens.map((t) => t[1]),
    meta_info: {
      id: "9f2c41d0",
      finish_reason: { type: "length", length: tokens.length },
      prompt_tokens: 6,
      completion_tokens: tokens.length,
      cached_tokens: 0,
      e2e_latency: 0.05,
      output_token_logprobs: tokens.map(([text, id, lp]) => [lp, id, text]),
    },
  };
  return { stdout: `${JSON.stringify(body)}${MARK}${status}` };
}

const KNOWN: Record<string, Token[]> = {
  "The capital of France is": [
    [" Paris", 12095, -0.004],
    [".", 13, -0.02],
  ],
  "The largest planet in our solar system is": [
    [" Jupiter", 49295, -0.01],
    [".", 13, -0.03],
  ],
  "The chemical symbol for gold is": [
    [" Au", 32566, -0.02],
    [".", 13, -0.01],
  ],
};

const STORY: Token[] =
  " Old Tom kept the light burning through every storm , counting ships and writing their names in a worn leather book by the window"
    .split(" ")
    .slice(1)
    .map((w, i) => [` ${w}`, 1000 + i, -0.5 - (i % 5) * 0.1]);

/** The prompt a sanity request sends (on stdin, as JSON). */
export function promptOf(options: ExecOptions | undefined): string {
  return (JSON.parse(options?.stdin ?? "{}") as { text: string }).text;
}

/** A sane model's answer to each sanity prompt. */
export const saneAnswer = (_command: string, options: ExecOptions | undefined) =>
  generated(KNOWN[promptOf(options)] ?? STORY);

/** The SM120 FP4 failure of DESIGN.md §1: `!!!!` (argmax fell to token 0) with null (NaN) logprobs. */
export const nanAnswer = () => generated(Array.from({ length: 32 }, (): Token => ["!", 0, null]));

// ---------------------------------------------------------------------------------------------------
// bench_serving: its summary block, `"{:<40} {:<10}"` rows, as test/unit/bench-serving.test.ts captured it.

const row = (label: string, value: string) => `${label.padEnd(40)} ${value.padEnd(10)}`;
const rule = (title: string, c: string) => {
  const extra = Math.max(0, 50 - title.length);
  return c.repeat(Math.floor(extra / 2)) + title + c.repeat(extra - Math.floor(extra / 2));
};

export interface BenchNumbers {
  concurrency: number;
  prompts: number;
  outputThroughput: number;
  medianTtftMs: number;
  medianTpotMs: number;
}

export const SINGLE_NUMBERS: BenchNumbers = {
  concurrency: 1,
  prompts: 8,
  outputThroughput: 61.42,
  medianTtftMs: 180.33,
  medianTpotMs: 15.91,
};
export const LOADED_NUMBERS: BenchNumbers = {
  concurrency: 16,
  prompts: 32,
  outputThroughput: 414.99,
  medianTtftMs: 598.12,
  medianTpotMs: 33.02,
};

/** bench_serving's stdout for one run (its preamble, then the summary). */
export function benchOutput(n: BenchNumbers): Partial<ExecResult> {
  const duration = (n.prompts * 128) / n.outputThroughput;
  return {
    stdout: [
      `Namespace(backend='sglang', host='127.0.0.1', port=30000, model='${PLAN.modelDir}', dataset_name='random', num_prompts=${n.prompts}, max_concurrency=${n.concurrency}, seed=1)`,
      `#Input tokens: ${n.prompts * 1024}`,
      `#Output tokens: ${n.prompts * 128}`,
      "Starting warmup with 1 sequences...",
      "Warmup completed with 1 sequences. Starting main benchmark run...",
      "",
      rule(" Serving Benchmark Result ", "="),
      row("Backend:", "sglang"),
      row("Traffic request rate:", "inf"),
      row("Max request concurrency:", String(n.concurrency)),
      row("Successful requests:", String(n.prompts)),
      row("Benchmark duration (s):", duration.toFixed(2)),
      row("Total input tokens:", String(n.prompts * 1024)),
      row("Total generated tokens:", String(n.prompts * 128)),
      row("Request throughput (req/s):", (n.prompts / duration).toFixed(2)),
      row("Output token throughput (tok/s):", n.outputThroughput.toFixed(2)),
      row("Total token throughput (tok/s):", ((n.prompts * 1152) / duration).toFixed(2)),
      rule("Time to First Token", "-"),
      row("Median TTFT (ms):", n.medianTtftMs.toFixed(2)),
      rule("Time per Output Token (excl. 1st token)", "-"),
      row("Median TPOT (ms):", n.medianTpotMs.toFixed(2)),
      "=".repeat(50),
      "",
    ].join("\n"),
  };
}

/** The bench_serving run of one setting (single stream: concurrency 1; loaded: 16). */
export const benchRun = (concurrency: number) =>
  new RegExp(`-m sglang\\.bench_serving .*--max-concurrency ${concurrency} `);

/** bench_serving when the server refuses its warmup request: a traceback, no summary, exit 1. */
export const WARMUP_FAILED: Partial<ExecResult> = {
  code: 1,
  stdout: "Starting warmup with 1 sequences...\n",
  stderr: [
    "Traceback (most recent call last):",
    '  File "<frozen runpy>", line 198, in _run_module_as_main',
    `  File "${SRC}/bench_serving.py", line 1422, in benchmark`,
    "    raise ValueError(",
    "ValueError: Warmup failed - Please make sure benchmark arguments are correctly specified. Error: Traceback (most recent call last):",
    "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 127.0.0.1:30000 ssl:default [Connect call failed ('127.0.0.1', 30000)]",
  ].join("\n"),
};

// ---------------------------------------------------------------------------------------------------
// The final check and the flip-back window's look: `systemctl show -p ActiveState -p SubState -p MainPID`
// (systemd's KEY=value lines), then, for the final check, the health probes' statuses.

/**
 * The host's units as systemd shows them: each named unit active with its MainPID, any other inactive;
 * health probes answer 200 for an active unit's command, and sanity prompts are answered sanely (on any
 * port). A unit given `0` is shown failed, and the check's health probe gets nothing.
 */
export function unitsServe(fake: Fake, pids: Record<string, number>): void {
  const shown = (command: string) => {
    const unit = Object.keys(pids).find((u) => command.includes(u));
    const pid = unit === undefined ? 0 : pids[unit]!;
    return {
      pid,
      text:
        pid === 0
          ? "ActiveState=failed\nSubState=failed\nMainPID=0"
          : `ActiveState=active\nSubState=running\nMainPID=${pid}`,
    };
  };
  fake.host.on(/systemctl show -p ActiveState -p SubState -p MainPID/, (command) => {
    const { pid, text } = shown(command);
    if (!command.includes("---direct---")) return { stdout: `${text}\n` };
    const status = pid === 0 ? "000" : "200";
    return {
      stdout: `${text}\n---direct---\n${status}\n---door---\n${command.includes("health_generate", command.indexOf("---door---")) ? `${status}\n` : ""}`,
    };
  });
  fake.host.on(/\/generate/, saneAnswer);
  // a unit's process as the rollback reads it after the old unit's health (unit-steps.ts mainPid)
  fake.host.on(/systemctl show -p MainPID --value/, (command) => ({ stdout: `${shown(command).pid}\n` }));
}

/**
 * Gives the fake host a front door (hosts[].frontDoor: slots `blue` and `hold`, a 300 s hold) whose
 * HAProxy does what `door` says: the Runtime API calls a test needs, each a fake.
 */
export function withFrontDoor(
  fake: Fake,
  door: Partial<Pick<HostFrontDoor["door"], "setStates" | "setState" | "sessions" | "servers">>,
): void {
  (fake.ctx.host as { frontDoor?: HostFrontDoor }).frontDoor = {
    door: {
      backend: "sglang",
      description: "HAProxy backend sglang",
      ...door,
    } as unknown as HostFrontDoor["door"],
    server: "blue",
    hold: "hold",
    holdSeconds: 300,
    slots: [{ server: "blue", port: fake.ctx.host.config.servingPort }],
  };
}
