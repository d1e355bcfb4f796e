import { describe, expect, it } from "vitest";
import { sanityStage } from "../../../jobs/swap/stages/sanity.ts";
import { SANITY_PROMPTS } from "../../../src/engine/sanity.ts";
import type { Fake } from "./fake-stage-context.ts";
import {
  ago,
  approvedRecord,
  generated,
  type LateOptions,
  lateContext,
  later,
  nanAnswer,
  promptOf,
  saneAnswer,
  unreachable,
} from "./late-stage-fixtures.ts";

const GENERATE = /\/generate$/;

/** A swap whose new unit is healthy: the sanity check is next. */
function healthy(options: LateOptions = {}): Fake {
  const stages = approvedRecord().stages!;
  return lateContext({
    ...options,
    record: {
      step: "sanity",
      switch: { startedAt: ago(70), oldStoppedAt: ago(60), newStartedAt: ago(59), done: true },
      healthyAt: ago(1),
      downtimeSeconds: 59,
      stages: {
        ...stages,
        switch: { state: "done", startedAt: ago(70), finishedAt: ago(59) },
        health: { state: "done", startedAt: ago(59), finishedAt: ago(1), detail: "healthy; downtime 59 s" },
      },
    },
  });
}

const sanityFailed = (fake: Fake) => {
  const event = fake.events().find((e) => e.type === "sanity-failed");
  if (event?.type !== "sanity-failed") throw new Error("no sanity-failed event");
  return event;
};

describe("sanityStage", () => {
  it("asks the deterministic prompts on the serving port and goes on to the benchmark when the answers are sane", async () => {
    const fake = healthy();
    fake.host.on(GENERATE, saneAnswer);

    const result = await sanityStage(fake.ctx, "release");

    expect(result).toEqual({ next: "release" });
    const asked = fake.host.commands.filter((c) => GENERATE.test(c.text));
    expect(asked.map((c) => promptOf({ stdin: c.stdin! }))).toEqual(SANITY_PROMPTS.map((p) => p.prompt));
    for (const c of asked) {
      // on the loopback, at temperature 0 with logprobs, within settings.sanityTimeoutSeconds
      expect(c.text).toContain("--max-time 120 ");
      expect(c.text).toContain("http://127.0.0.1:30000/generate");
      expect(JSON.parse(c.stdin!)).toMatchObject({
        sampling_params: { temperature: 0 },
        return_logprob: true,
      });
    }
    expect(fake.swap.record.sanity).toEqual({
      ok: true,
      summary: '4/4 prompts answered sanely (e.g. "The capital of France is" → " Paris.")',
    });
    expect(fake.swap.record.stages.sanity).toEqual({
      state: "done",
      startedAt: later(0),
      finishedAt: later(0),
      detail: fake.swap.record.sanity!.summary,
    });
    expect(fake.events()).toEqual([]);
  });

  it("fails with touched:true on NaN output (!!!! with null logprobs) and names the prompts in a sanity-failed event", async () => {
    const fake = healthy();
    fake.host.on(GENERATE, nanAnswer);

    const result = await sanityStage(fake.ctx, "release");

    expect(result).toMatchObject({
      fail: '4/4 prompts failed (4 NaN/null logprobs): NaN logits (argmax fell to token 0, "!!!!")',
      code: "SANITY_FAILED",
      touched: true,
    });
    // what to try names what this swap applied, and where to change it
    const fix = (result as { fix: string }).fix;
    expect(fix).toMatch(/^the plan applied .* \(recipe [^)]+\)/);
    expect(fix).toContain("--engine-ref");
    const summary = (result as { fail: string }).fail;
    expect(summary).toContain("4 NaN/null logprobs");
    expect(summary).toContain('"!!!!"');
    expect(fake.swap.record.sanity).toEqual({ ok: false, summary });
    expect(fake.swap.record.stages.sanity).toMatchObject({
      state: "failed",
      finishedAt: later(0),
      detail: summary,
    });
    const event = sanityFailed(fake);
    expect(event.summary).toBe(summary);
    expect(event.prompts).toEqual(
      SANITY_PROMPTS.map((p) => ({
        verdict: "nan",
        prompt: p.prompt,
        output: "!".repeat(32),
        detail: `32 of 32 logprobs are null (NaN); output "${"!".repeat(32)}"`,
      })),
    );
  });

  it("fails on garbage: a wrong known answer and a repetition loop, each named with its verdict", async () => {
    const fake = healthy();
    fake.host.on(GENERATE, (command, options) => {
      const prompt = promptOf(options);
      if (prompt === "The capital of France is")
        return generated([
          [" Berlin", 19846, -2.1],
          [".", 13, -0.3],
        ]);
      if (prompt.startsWith("Here is a short story"))
        return generated(Array.from({ length: 32 }, () => [" the", 279, -0.01] as [string, number, number]));
      return saneAnswer(command, options);
    });

    const result = await sanityStage(fake.ctx, "release");

    expect(result).toMatchObject({
      fail: "2/4 prompts failed (1 wrong answer, 1 repetitive)",
      code: "SANITY_FAILED",
      touched: true,
    });
    expect(sanityFailed(fake).prompts.map((p) => [p.verdict, p.prompt])).toEqual([
      ["wrong-answer", "The capital of France is"],
      ["ok", "The largest planet in our solar system is"],
      ["ok", "The chemical symbol for gold is"],
      ["repetitive", "Here is a short story about a lighthouse keeper:"],
    ]);
    expect(sanityFailed(fake).prompts[0]?.detail).toBe('expected "Paris", got " Berlin."');
  });

  it("keeps the event small: prompts, outputs and details are cut", async () => {
    const fake = healthy();
    const long = Array.from({ length: 300 }, (_, i) => [` w${i}`, 5000 + i, -1] as [string, number, number]);
    fake.host.on(GENERATE, () => generated(long));

    await sanityStage(fake.ctx, "release");

    for (const p of sanityFailed(fake).prompts) {
      expect(p.output.length).toBeLessThanOrEqual(200);
      expect(p.detail.length).toBeLessThanOrEqual(300);
    }
  });

  it("fails when the server does not answer (nothing listens on the port): a failed request is a failed prompt", async () => {
    const fake = healthy();
    fake.host.on(GENERATE, {
      code: 7,
      stderr: "curl: (7) Failed to connect to 127.0.0.1 port 30000 after 0 ms: Couldn't connect to server\n",
    });

    const result = await sanityStage(fake.ctx, "release");

    expect(result).toMatchObject({ fail: expect.stringContaining("4 request failed"), touched: true });
    expect(sanityFailed(fake).prompts[0]).toMatchObject({
      verdict: "error",
      detail: "connection refused: nothing listens on the serving port",
    });
  });

  it("throws an unreachable host for a retry, leaving the stage running", async () => {
    const fake = healthy();
    fake.host.on(GENERATE, unreachable());

    await expect(sanityStage(fake.ctx, "release")).rejects.toMatchObject({ code: "HOST_UNREACHABLE" });

    expect(fake.swap.record.stages.sanity.state).toBe("running");
    expect(fake.swap.record.sanity).toBeUndefined();
    expect(fake.events()).toEqual([]);
  });
});
