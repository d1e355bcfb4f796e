import { describe, expect, it } from "vitest";
import { MAX_NEW_TOKENS, runSanity, SANITY_PROMPTS } from "../../src/engine/sanity.ts";
import { generateBody } from "../../src/engine/sglang/generate-judge.ts";
import { sglangEngine } from "../../src/engine/sglang/sglang-engine.ts";
import { CodedError } from "../../src/errors.ts";
import type { ShellCommand } from "../../src/host/shell-quote.ts";
import type { ExecOptions, ExecResult } from "../../src/host/transport.ts";

const MARK = "\n__modelswap_http_status__=";

interface Call {
  command: string;
  options: ExecOptions | undefined;
}

/** A fake host: answers each /generate request from the prompt in its JSON body. */
function fakeHost(answer: (prompt: string) => Partial<ExecResult> & { body?: unknown; status?: number }) {
  const calls: Call[] = [];
  const exec = async (command: ShellCommand, options?: ExecOptions): Promise<ExecResult> => {
    calls.push({ command: command.text, options });
    const prompt = (JSON.parse(options?.stdin ?? "{}") as { text: string }).text;
    const a = answer(prompt);
    const body = typeof a.body === "string" ? a.body : JSON.stringify(a.body ?? {});
    return {
      code: a.code ?? 0,
      signal: null,
      stdout: a.stdout ?? `${body}${MARK}${a.status ?? 200}`,
      stderr: a.stderr ?? "",
      durationMs: 5,
    };
  };
  return { exec, calls };
}

/** A /generate answer as SGLang returns it, from (text, id, logprob) tokens. */
function generated(tokens: [string, number, number | null][]) {
  return {
    text: tokens.map((t) => t[0]).join(""),
    output_ids: tokens.map((t) => t[1]),
    meta_info: {
      id: "9f2c",
      finish_reason: { type: "stop", matched: 151645 },
      prompt_tokens: 6,
      completion_tokens: tokens.length,
      cached_tokens: 0,
      e2e_latency: 0.05,
      output_token_logprobs: tokens.map(([text, id, lp]) => [lp, id, text]),
    },
  };
}

const KNOWN: Record<string, [string, number, number | null][]> = {
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

const STORY: [string, number, number | null][] =
  " Old Tom kept the light burning through every storm , counting ships and writing their names in a worn leather book by the window"
    .split(" ")
    .slice(1)
    .map((w, i) => [` ${w}`, 1000 + i, -0.5 - (i % 5) * 0.1]);

function sane(prompt: string) {
  return { body: generated(KNOWN[prompt] ?? STORY) };
}

describe("runSanity", () => {
  it("passes a sane model, sending each prompt as JSON on stdin to curl on the loopback", async () => {
    const host = fakeHost(sane);
    const report = await runSanity(sglangEngine, host.exec, 30001, { timeoutMs: 20_000 });
    expect(report.ok).toBe(true);
    expect(report.prompts.map((p) => p.verdict)).toEqual(SANITY_PROMPTS.map(() => "ok"));
    expect(report.summary).toMatch(/^4\/4 prompts answered sanely/);
    const france = report.prompts[0];
    expect(france).toMatchObject({
      prompt: "The capital of France is",
      expected: "Paris",
      output: " Paris.",
      tokens: 2,
      nullLogprobs: 0,
      nanLogprobs: 0,
      topTokenShare: 0.5,
    });

    expect(host.calls).toHaveLength(SANITY_PROMPTS.length);
    for (const call of host.calls) {
      expect(call.command).toBe(
        "curl -sS --max-time 20 -X POST -H 'Content-Type: application/json' --data-binary @- -w '\n__modelswap_http_status__=%{http_code}' http://127.0.0.1:30001/generate",
      );
      // The prompt travels on stdin only, never on the command line.
      expect(call.command).not.toContain("capital");
      const body = JSON.parse(call.options?.stdin ?? "");
      expect(body).toMatchObject({
        sampling_params: { temperature: 0, max_new_tokens: MAX_NEW_TOKENS },
        return_logprob: true,
      });
      expect(call.options?.timeoutMs).toBeGreaterThan(20_000);
    }
  });

  it("fails '!!!!' with null logprobs (healthy server, NaN logits) as nan", async () => {
    const bangs: [string, number, null][] = Array.from({ length: MAX_NEW_TOKENS }, () => ["!", 0, null]);
    const host = fakeHost(() => ({ body: generated(bangs) }));
    const report = await runSanity(sglangEngine, host.exec, 30000);
    expect(report.ok).toBe(false);
    for (const p of report.prompts) {
      expect(p).toMatchObject({
        verdict: "nan",
        output: "!".repeat(32),
        tokens: 32,
        nullLogprobs: 32,
        topTokenShare: 1,
      });
    }
    expect(report.summary).toContain("4/4 prompts failed (4 NaN/null logprobs)");
    expect(report.summary).toContain('"!!!!"');
    // one line: the reason, not every prompt's answer (the thread lists those)
    expect(report.summary).toBe(
      '4/4 prompts failed (4 NaN/null logprobs): NaN logits (argmax fell to token 0, "!!!!")',
    );
  });

  it("counts a bare NaN (Python json) as a NaN logprob", async () => {
    const host = fakeHost((prompt) => {
      const body = JSON.stringify(generated(KNOWN[prompt] ?? STORY)).replace("-0.004", "NaN");
      return { body };
    });
    const report = await runSanity(sglangEngine, host.exec, 30000);
    expect(report.prompts[0]).toMatchObject({ verdict: "nan", nanLogprobs: 1, nullLogprobs: 0 });
    expect(report.prompts.slice(1).every((p) => p.verdict === "ok")).toBe(true);
    expect(report.ok).toBe(false);
  });

  it("fails an empty output, a repetition loop and a wrong answer", async () => {
    const loop: [string, number, number][] = [
      [" the", 279, -0.3],
      ...Array.from({ length: 27 }, (): [string, number, number] => [" the", 279, -0.01]),
      [" end", 835, -1],
      [".", 13, -1],
    ];
    const host = fakeHost((prompt) => {
      if (prompt.includes("France")) return { body: generated([]) };
      if (prompt.includes("planet")) return { body: generated(loop) };
      if (prompt.includes("gold"))
        return {
          body: generated([
            [" Ag", 9004, -0.4],
            [".", 13, -0.1],
          ]),
        };
      return sane(prompt);
    });
    const report = await runSanity(sglangEngine, host.exec, 30000);
    expect(report.prompts.map((p) => p.verdict)).toEqual(["empty", "repetitive", "wrong-answer", "ok"]);
    expect(report.prompts[1]?.topTokenShare).toBeCloseTo(28 / 30);
    expect(report.prompts[1]?.detail).toContain("93 %");
    expect(report.prompts[2]?.detail).toBe('expected "Au", got " Ag."');
    expect(report.summary).toMatch(/^3\/4 prompts failed \(1 empty, 1 repetitive, 1 wrong answer\)/);
  });

  it("matches the expected answer as a whole word, in any case", async () => {
    const host = fakeHost((prompt) => {
      if (prompt.includes("gold"))
        return {
          body: generated([
            [" Because", 1, -1],
            [" gold", 2, -1],
          ]),
        };
      if (prompt.includes("France"))
        return {
          body: generated([
            [" PARIS", 3, -0.1],
            ["!", 4, -0.1],
          ]),
        };
      return sane(prompt);
    });
    const report = await runSanity(sglangEngine, host.exec, 30000);
    expect(report.prompts[0]?.verdict).toBe("ok");
    expect(report.prompts[2]?.verdict).toBe("wrong-answer"); // "Because" contains "au" but not the word "Au"
  });

  it("does not call a short known answer repetitive", async () => {
    const host = fakeHost((prompt) =>
      prompt.includes("France") ? { body: generated([[" Paris", 1, -0.01]]) } : sane(prompt),
    );
    const report = await runSanity(sglangEngine, host.exec, 30000);
    expect(report.prompts[0]).toMatchObject({ verdict: "ok", topTokenShare: 1, tokens: 1 });
  });

  it("reports failed requests as error verdicts with the reason", async () => {
    const host = fakeHost((prompt) => {
      if (prompt.includes("France")) return { code: 7, stdout: "", stderr: "curl: (7) Failed to connect" };
      if (prompt.includes("planet"))
        return { status: 400, body: { object: "error", message: "The input is too long", code: 400 } };
      if (prompt.includes("gold")) return { body: "<html>Bad Gateway</html>" };
      return { code: 28, stdout: "", stderr: "curl: (28) Operation timed out after 60001 milliseconds" };
    });
    const report = await runSanity(sglangEngine, host.exec, 30000);
    expect(report.ok).toBe(false);
    expect(report.prompts.map((p) => p.verdict)).toEqual(["error", "error", "error", "error"]);
    expect(report.prompts[0]?.detail).toBe("connection refused: nothing listens on the serving port");
    expect(report.prompts[1]?.detail).toMatch(/^HTTP 400 from \/generate: .*The input is too long/);
    expect(report.prompts[2]?.detail).toContain("not JSON");
    expect(report.prompts[3]?.detail).toContain("timed out");
  });

  it("judges a command timeout, but rethrows a lost connection to the host", async () => {
    const timeout = async (): Promise<ExecResult> => {
      throw new CodedError("HOST_COMMAND_TIMEOUT", "a command on t did not finish within 65 s", "…");
    };
    const report = await runSanity(sglangEngine, timeout, 30000);
    expect(report.prompts.every((p) => p.verdict === "error" && p.detail.includes("did not finish"))).toBe(
      true,
    );
    const lost = async (): Promise<ExecResult> => {
      throw new CodedError("HOST_CONNECTION_LOST", "the SSH connection to t dropped", "…");
    };
    await expect(runSanity(sglangEngine, lost, 30000)).rejects.toMatchObject({
      code: "HOST_CONNECTION_LOST",
    });
  });

  it("builds the body with JSON.stringify (quotes and newlines survive)", () => {
    const body = JSON.parse(generateBody(`it's "quoted"\n$(rm -rf /)`));
    expect(body.text).toBe(`it's "quoted"\n$(rm -rf /)`);
  });
});
