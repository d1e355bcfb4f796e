import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseBenchSummary, SINGLE_STREAM } from "../../src/engine/bench-serving.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { engineFor, engineOfExecStart } from "../../src/engine/engines.ts";
import { renderUnit } from "../../src/engine/render-unit.ts";
import { runSanity, SANITY_PROMPTS, type SanityPrompt } from "../../src/engine/sanity.ts";
import { quote } from "../../src/host/shell-quote.ts";
import type { ExecResult } from "../../src/host/transport.ts";

/*
 * The Engine contract, the same tests over every engine (as transport-contract.test.ts does for the host
 * transports): what a swap, the monitor and /llm status ask of an engine means the same whichever serves.
 * Each engine brings its own wire format, below: its answers to a sanity prompt are built as the engine
 * writes them (SGLang's /generate and vLLM's /v1/completions, as testbench/gpu-host/SGLANG.md and VLLM.md
 * document them from the upstream source), and its benchmark summary is bench_serving's layout.
 */

const run = promisify(execFile);
const MARK = "\n__modelswap_http_status__=";
/** Words no shell may read as anything but text. */
const HOSTILE = `it's $(touch /tmp/pwned) \`id\` ; rm -rf / "x" \\ *`;

/** One token of an answer: its text, its id, its logprob (null: orjson's NaN). */
type Token = [text: string, id: number, logprob: number | null | string];

interface WireFormat {
  /** The body the engine answers a prompt with, from its tokens. */
  answer(tokens: readonly Token[]): unknown;
  /** The answer's HTTP status and body when the model's logprobs are NaN and it cannot send them. */
  nanAnswer?: { status: number; body: string };
}

const WIRE: Record<string, WireFormat> = {
  sglang: {
    // /generate with return_logprob: output_token_logprobs [[logprob, id, text]], NaN written as null
    answer: (tokens) => ({
      text: tokens.map((t) => t[0]).join(""),
      output_ids: tokens.map((t) => t[1]),
      meta_info: {
        id: "9f2c",
        finish_reason: { type: "length", length: tokens.length },
        prompt_tokens: 6,
        completion_tokens: tokens.length,
        output_token_logprobs: tokens.map(([text, id, lp]) => [lp, id, text]),
      },
    }),
  },
  vllm: {
    // /v1/completions with logprobs: 1; a NaN logprob cannot be written as JSON: HTTP 500 (vllm#13035)
    answer: (tokens) => ({
      id: "cmpl-1",
      object: "text_completion",
      choices: [
        {
          index: 0,
          text: tokens.map((t) => t[0]).join(""),
          logprobs: {
            tokens: tokens.map((t) => t[0]),
            token_logprobs: tokens.map((t) => t[2]),
            text_offset: [],
            top_logprobs: [],
          },
          finish_reason: "length",
        },
      ],
      usage: { prompt_tokens: 6, completion_tokens: tokens.length, total_tokens: 6 + tokens.length },
    }),
    nanAnswer: { status: 500, body: "Internal Server Error" },
  },
};

const PARIS: SanityPrompt = { prompt: "The capital of France is", expected: "Paris" };
const SANE: Token[] = [
  [" Paris", 12095, -0.004],
  [".", 13, -0.02],
];
/** The broken-kernel answer: argmax fell to token 0 ("!"), every logprob NaN. */
const BANGS: Token[] = Array.from({ length: 32 }, () => ["!", 0, null]);
/** A loop with sane logprobs: one token over and over. */
const LOOP: Token[] = Array.from({ length: 16 }, (_, i) => [
  i % 8 === 0 ? " the" : " light",
  i % 8 === 0 ? 1 : 2,
  -0.1,
]);

const result = (body: unknown, status = 200, code = 0): ExecResult => ({
  code,
  signal: null,
  stdout: `${typeof body === "string" ? body : JSON.stringify(body)}${MARK}${status}`,
  stderr: "",
  durationMs: 3,
});

const ENGINES = ["sglang", "vllm"] as const;

describe.each(ENGINES)("Engine contract: %s", (kind) => {
  const engine: Engine = engineFor(kind);
  const wire = WIRE[kind]!;

  it("is the engine of its kind, named for people", () => {
    expect(engine.kind).toBe(kind);
    expect(engine.name).toMatch(/^(SGLang|vLLM)$/);
    expect(engine.packageName).toBe(kind);
  });

  it("renders a unit that runs it, found again from its ExecStart, with its model directory", () => {
    const modelDir = "/srv/models/Qwen--Qwen3-8B--43da92d546ab";
    const modelFlag = engine.spellingsOf("model-path")[0]!;
    const unit = renderUnit({
      kind,
      repo: "Qwen/Qwen3-8B",
      sha: "43da92d546abdfe33cded301c28224a774a893b9",
      swapId: "sw-1",
      serving: "sglang-old.service",
      venv: "/srv/venv",
      engine: { buildDir: "/srv/engine/builds/0123456", describe: "main at 0123456" },
      flags: [
        modelFlag.positional === true
          ? { flag: modelFlag.flag, value: modelDir, positional: true }
          : { flag: modelFlag.flag, value: modelDir },
        { flag: engine.spellingsOf("tp-size")[0]!.flag, value: "8" },
      ],
      timeoutStartSeconds: 900,
    });
    expect(unit.name.startsWith(engine.unitPrefix)).toBe(true);
    expect(unit.text).toContain(`Description=${engine.name} serving Qwen/Qwen3-8B@43da92d`);
    expect(unit.text).toContain(`Environment=PYTHONPATH=${engine.importPath("/srv/engine/builds/0123456")}`);
    const execStart = unit.text
      .slice(unit.text.indexOf("ExecStart="))
      .split("\nRestart=")[0]!
      .replace("ExecStart=", "")
      .replace(/\\\n/g, " ")
      .split(/\s+/)
      .filter((w) => w !== "");
    expect(execStart.slice(0, 1 + engine.entryPoint.length)).toEqual([
      "/srv/venv/bin/python",
      ...engine.entryPoint,
    ]);
    expect(engine.runsIn(execStart)).toBe(true);
    expect(engineOfExecStart(execStart).kind).toBe(kind);
    expect(engine.modelDirOf(execStart)).toBe(modelDir);
  });

  it("spells a recipe's settings as flags, current upstream first, and an unknown one as --<setting>", () => {
    for (const setting of ["tp-size", "context-length"])
      expect(engine.spellingsOf(setting)[0]?.flag).toMatch(/^--[a-z0-9-]+$/);
    expect(engine.spellingsOf("some-new-flag")).toEqual([{ flag: "--some-new-flag" }]);
    const fraction = engine.memory.defaultFraction(141 * 2 ** 30);
    expect(fraction).toBeGreaterThan(0.5);
    expect(fraction).toBeLessThan(1);
  });

  it("asks a generating request on the loopback port for health, and words each failure", () => {
    const probe = engine.healthProbe(30011, 5).text;
    expect(probe).toContain("127.0.0.1:30011");
    expect(probe).toContain(kind === "sglang" ? "/health_generate" : "/v1/completions");
    expect(engine.healthFailure(503, 0, 5)).toBe(`${engine.healthLabel} answered HTTP 503`);
    expect(engine.healthFailure(null, 7, 5)).toMatch(/connection refused/);
    expect(engine.healthFailure(null, 28, 5)).toMatch(/timed out after 5 s/);
  });

  it("sends a sanity prompt on standard input, never on the command line, at temperature 0 with logprobs", () => {
    const request = engine.sanityRequest(30011, 60, HOSTILE);
    expect(request.command.text).not.toContain("pwned");
    expect(request.command.text).toContain("127.0.0.1:30011");
    const body = JSON.parse(request.stdin) as Record<string, unknown>;
    expect(JSON.stringify(body)).toContain(JSON.stringify(HOSTILE).slice(1, -1));
    expect(JSON.stringify(body)).toMatch(/"temperature":0/);
    expect(JSON.stringify(body)).toMatch(/"(return_logprob|logprobs)":(true|1)/);
  });

  it("judges a sane answer sane", () => {
    const verdict = engine.judgeSanity(PARIS, result(wire.answer(SANE)));
    expect(verdict).toMatchObject({
      verdict: "ok",
      output: " Paris.",
      tokens: 2,
      nullLogprobs: 0,
      nanLogprobs: 0,
    });
  });

  it("finds NaN: the broken kernels' '!!!!' answer, whichever way the engine writes it", () => {
    const answer = wire.nanAnswer ?? { status: 200, body: JSON.stringify(wire.answer(BANGS)) };
    const verdict = engine.judgeSanity(PARIS, result(answer.body, answer.status));
    expect(verdict.verdict).toBe("nan");
    expect(verdict.nullLogprobs + verdict.nanLogprobs).toBeGreaterThan(0);
  });

  it("finds NaN written as Python's bare NaN, and non-finite logprobs", () => {
    const text = JSON.stringify(
      wire.answer([
        [" Paris", 12095, -0.125],
        [".", 13, -1.5],
      ]),
    );
    const bare = text.replace("-0.125", "NaN");
    expect(engine.judgeSanity(PARIS, result(bare)).verdict).toBe("nan");
    expect(engine.judgeSanity(PARIS, result(text.replace("-1.5", "-Infinity"))).verdict).toBe("nan");
  });

  it("finds garbage with sane logprobs: a loop, an empty answer, a wrong answer, a non-JSON answer", () => {
    const story: SanityPrompt = { prompt: "Here is a short story about a lighthouse keeper:" };
    expect(engine.judgeSanity(story, result(wire.answer(LOOP))).verdict).toBe("repetitive");
    expect(engine.judgeSanity(PARIS, result(wire.answer([]))).verdict).toBe("empty");
    const lyon = engine.judgeSanity(PARIS, result(wire.answer([[" Lyon", 5, -0.2]])));
    expect(lyon).toMatchObject({ verdict: "wrong-answer", detail: 'expected "Paris", got " Lyon"' });
    expect(engine.judgeSanity(PARIS, result("<html>bad gateway</html>")).verdict).toBe("error");
    expect(engine.judgeSanity(PARIS, result("", 200, 7)).detail).toMatch(/connection refused/);
  });

  it("runs every sanity prompt through the host and passes a sane model", async () => {
    const tokens: Record<string, Token[]> = {
      "The capital of France is": SANE,
      "The largest planet in our solar system is": [[" Jupiter", 49295, -0.01]],
      "The chemical symbol for gold is": [[" Au", 32566, -0.02]],
    };
    const asked: string[] = [];
    const report = await runSanity(
      engine,
      async (command, options) => {
        asked.push(command.text);
        const prompt = SANITY_PROMPTS.find((p) => options?.stdin?.includes(JSON.stringify(p.prompt)));
        return result(wire.answer(tokens[prompt?.prompt ?? ""] ?? [[" Once", 7, -0.3]]));
      },
      30011,
    );
    expect(report.ok).toBe(true);
    expect(asked).toHaveLength(SANITY_PROMPTS.length);
  });

  it("benchmarks with its own client, every value quoted, and reads the summary it prints", async () => {
    const command = engine.benchCommand({
      ...SINGLE_STREAM,
      venv: "/srv/venv",
      port: 30011,
      model: `/srv/models/${HOSTILE}`,
      servedModelName: HOSTILE,
    });
    expect(command.text).toContain(quote(`/srv/models/${HOSTILE}`));
    // the shell reads the hostile path back as one word, unchanged
    const { stdout } = await run("bash", [
      "-c",
      `set -- ${command.text}; for w; do printf '%s\\n' "$w"; done`,
    ]);
    expect(stdout.split("\n")).toContain(`/srv/models/${HOSTILE}`);
    // and the pkill pattern of a stray run matches the command, but not the shell that runs pkill
    const pattern = new RegExp(engine.benchProcessPattern(30011));
    expect(pattern.test(command.text.replace(/'/g, ""))).toBe(true);
    expect(pattern.test(`pkill -f ${engine.benchProcessPattern(30011)}`)).toBe(false);
    const summary = [
      "============ Serving Benchmark Result ============",
      "Successful requests:                     8",
      "Benchmark duration (s):                  9.81",
      "Output token throughput (tok/s):         104.38",
      "Median TTFT (ms):                        41.20",
      "Mean TPOT (ms):                          9.10",
      "==================================================",
    ].join("\n");
    expect(engine.parseBenchSummary(summary, "")).toEqual(parseBenchSummary(summary, ""));
    expect(engine.parseBenchSummary(summary, "")).toMatchObject({
      outputThroughput: 104.38,
      medianTtftMs: 41.2,
    });
  });

  it("builds with every configured value quoted, in a script bash accepts", async () => {
    const script = engine.buildScript({
      upstream: `https://example.com/${HOSTILE}.git`,
      fetchRef: "refs/heads/main",
      commit: "0123456789abcdef0123456789abcdef01234567",
      buildDir: "/srv/engine/builds/0123456",
      venv: "/srv/venv",
      patches: [`/srv/patches/${HOSTILE}.patch`],
      compileKernels: false,
      dir: "/srv/tasks/build",
    }).text;
    expect(script).toContain(quote(`https://example.com/${HOSTILE}.git`));
    expect(script).toContain(quote(`/srv/patches/${HOSTILE}.patch`));
    await run("bash", ["-n", "-c", script]);
  });

  it("parks a unit started for it: its flags make a unit parkable, and its park and wake commands are bash on the loopback port", async () => {
    const sleep = engine.sleep;
    expect(sleep, `${kind} can park a model`).toBeDefined();
    const unitWith = (sleepFlags: boolean) =>
      renderUnit({
        kind,
        repo: "Qwen/Qwen3-8B",
        sha: "43da92d546abdfe33cded301c28224a774a893b9",
        swapId: "sw-1",
        serving: "old.service",
        venv: "/srv/venv",
        engine: { buildDir: "/srv/engine/builds/0123456", describe: "main at 0123456" },
        flags: [
          { flag: engine.spellingsOf("tp-size")[0]!.flag, value: "8" },
          ...(sleepFlags
            ? sleep!.settings.map((s) => ({ flag: engine.spellingsOf(s.setting)[0]!.flag }))
            : []),
          { flag: "--port", value: "30011" },
        ],
        ...(sleepFlags ? { env: sleep!.env } : {}),
        timeoutStartSeconds: 900,
      }).text;
    expect(sleep!.parkable(unitWith(true))).toBe(true);
    expect(sleep!.parkable(unitWith(false))).toBe(false);
    for (const command of [sleep!.sleepCommand(30011, 600), sleep!.wakeCommand(30011, 600)]) {
      expect(command.text).toContain("http://127.0.0.1:30011/");
      await run("bash", ["-n", "-c", command.text]);
    }
    expect(sleep!.keptPerGpuBytes).toBeGreaterThan(0);
    expect(sleep!.keptSource).not.toBe("");
    expect(sleep!.name).toMatch(/^(memory saver|sleep mode)$/);
  });

  it("finds the line that means the server will not come up, in its own journal format", () => {
    const prefix = kind === "vllm" ? "(EngineCore_DP0 pid=42) ERROR 03-20 10:00:00 [core.py:708] " : "";
    const journal = [
      `${prefix}Traceback (most recent call last):`,
      `${prefix}  File "/opt/engine/model_runner.py", line 372, in initialize`,
      `${prefix}    self.load_model()`,
      `${prefix}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB`,
    ];
    expect(engine.findFatalLine(journal)?.line).toMatch(/^torch\.OutOfMemoryError: CUDA out of memory/);
    expect(engine.findFatalLine(["Started unit.", `${prefix}INFO loading weights`])).toBeUndefined();
  });
});
