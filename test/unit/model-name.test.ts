import { describe, expect, it } from "vitest";
import { modelOfUnit } from "../../jobs/monitor/incident-facts.ts";
import { keepEnd, modelName } from "../../src/grammar/model-name.ts";

describe("a served model's name, the same in every message", () => {
  it("is the served name, else the meaningful end of the path, wherever the weights live", () => {
    expect(modelName("Qwen/Qwen3-8B-FP8")).toBe("Qwen/Qwen3-8B-FP8");
    // a unit written by hand without --served-model-name, serving from the Hub cache or a shared mount
    expect(
      modelName(
        "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B-FP8/snapshots/0123456789abcdef0123456789abcdef01234567",
      ),
    ).toBe("Qwen/Qwen3-8B-FP8");
    expect(modelName("/srv/models/nvidia--Qwen3.5-397B-A17B-NVFP4--43da92d546ab/")).toBe(
      "nvidia/Qwen3.5-397B-A17B-NVFP4",
    );
    expect(modelName("/mnt/shared/team-a/checkpoints/llama-3.2-1b")).toBe("checkpoints/llama-3.2-1b");
  });

  it("is the same for the alert (from the unit's ExecStart) as for status (from the server)", () => {
    const unit = `[Service]\nExecStart=/venv/bin/python -m sglang.launch_server --model-path /data/hf/hub/models--meta-llama--Llama-3.2-1B-Instruct/snapshots/abc --port 30000\n`;
    expect(modelOfUnit(unit)).toBe("meta-llama/Llama-3.2-1B-Instruct");
  });

  it("keeps a long name's end when it must be cut", () => {
    expect(keepEnd("nvidia/Qwen3.5-397B-A17B-NVFP4-with-a-very-long-suffix", 20)).toBe(
      "…-a-very-long-suffix",
    );
    expect(keepEnd("Qwen/Qwen3-8B", 40)).toBe("Qwen/Qwen3-8B");
  });
});
