import { describe, expect, it } from "vitest";
import { resolveStage } from "../../../jobs/swap/stages/resolve.ts";
import { CodedError } from "../../../src/errors.ts";
import type { ModelInfo } from "../../../src/hub/types.ts";
import { swapRecordSchema } from "../../../src/swap/swap-record.ts";
import { factsOf, modelInfoOf } from "../plan-fixtures.ts";
import { fakeContext } from "./fake-stage-context.ts";

const request = (info: ModelInfo) => ({
  model: { repo: info.repo, revision: "main" },
  dryRun: false,
  engineRef: "main",
});

describe("resolveStage", () => {
  it("pins the revision, keeps the model's summary and facts (not its config files) and goes on to preflight", async () => {
    const info = modelInfoOf("qwen3.5-moe-nvfp4");
    const fake = fakeContext({ hub: info, record: { request: request(info) } });

    expect(await resolveStage(fake.ctx)).toEqual({ next: "preflight" });

    expect(fake.resolved).toEqual([{ repo: info.repo, revision: "main" }]);
    const { record } = fake.swap;
    expect(record.model).toEqual({
      repo: info.repo,
      revision: "main",
      sha: info.sha,
      files: info.files,
      totalBytes: info.totalBytes,
      weightBytes: info.weightBytes,
      gated: info.gated,
      license: info.license,
    });
    expect(record.model).not.toHaveProperty("config");
    expect(record.model).not.toHaveProperty("quantConfig");
    expect(record.model).not.toHaveProperty("codeConfigs");
    expect(JSON.stringify(record)).not.toContain('"architectures"');
    expect(record.facts).toEqual(factsOf("qwen3.5-moe-nvfp4"));
    expect(record.stages.resolve).toMatchObject({
      state: "done",
      detail: `commit ${info.sha.slice(0, 7)} · 223 GB · ${info.files.length} files`,
    });
    // the record is one the store accepts
    expect(() => swapRecordSchema.parse(record)).not.toThrow();
    // resolve reads the Hub only: nothing runs on the host, nothing is told in the thread
    expect(fake.host.commands).toEqual([]);
    expect(fake.events()).toEqual([]);
    expect(fake.audit()).toMatchObject([
      { kind: "stage", stage: "resolve", detail: /^resolve done: commit / },
    ]);
  });

  it("shows the stage running on the card before the Hub answers", async () => {
    const info = modelInfoOf("llama-bf16-small");
    const fake = fakeContext({ record: { request: request(info) } });
    const seen: { state: string; detail?: string; checkpoints: number }[] = [];
    const ctx = {
      ...fake.ctx,
      hub: {
        resolve: async () => {
          seen.push({ ...fake.swap.record.stages.resolve, checkpoints: fake.checkpoints() });
          return info;
        },
      },
    };
    expect(await resolveStage(ctx)).toEqual({ next: "preflight" });
    expect(seen).toMatchObject([{ state: "running", detail: `${info.repo}@main`, checkpoints: 1 }]);
    expect(fake.swap.record.facts).toEqual(factsOf("llama-bf16-small"));
  });

  it("fails, nothing touched, with the Hub's coded error and its fix", async () => {
    const gated = new CodedError(
      "HUB_GATED",
      "meta-llama/Llama-3.2-1B-Instruct is a gated model and HF_TOKEN is not set",
      "Set HF_TOKEN with a token that accepted the license at https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct",
    );
    const fake = fakeContext({ hub: gated });

    const result = await resolveStage(fake.ctx);

    // the reason in one line; its code and fix are kept for the swap's end
    expect(result).toEqual({
      fail: "meta-llama/Llama-3.2-1B-Instruct is a gated model and HF_TOKEN is not set",
      code: "HUB_GATED",
      fix: "Set HF_TOKEN with a token that accepted the license at https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct",
      touched: false,
    });
    expect(fake.swap.record.stages.resolve).toMatchObject({
      state: "failed",
      detail: (result as { fail: string }).fail,
    });
    expect(fake.swap.record.stages.resolve.finishedAt).toBeDefined();
    expect(fake.swap.record.model).toBeUndefined();
    expect(fake.swap.record.facts).toBeUndefined();
    expect(fake.host.commands).toEqual([]);
    expect(fake.events()).toEqual([]);
  });

  it("fails, naming the field, on a model config it cannot read", async () => {
    const info = modelInfoOf("llama-bf16-small");
    const { num_hidden_layers: _layers, ...config } = info.config;
    const fake = fakeContext({ hub: { ...info, config }, record: { request: request(info) } });

    const result = await resolveStage(fake.ctx);

    expect(result).toMatchObject({ touched: false });
    const failed = result as { fail: string; code: string; fix: string };
    expect(failed.fail).toMatch(
      /^Cannot plan meta-llama\/Llama-3\.2-1B-Instruct: config\.json has no num_hidden_layers/,
    );
    expect(failed.code).toBe("MODEL_CONFIG_UNSUPPORTED");
    expect(failed.fix).toContain("modelswap reads the standard transformers config fields");
    expect(fake.swap.record.stages.resolve.state).toBe("failed");
    // a model it cannot plan is not kept half-read
    expect(fake.swap.record.model).toBeUndefined();
    expect(fake.swap.record.facts).toBeUndefined();
    expect(fake.host.commands).toEqual([]);
  });
});
