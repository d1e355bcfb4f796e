import type { EngineSource } from "../../src/engine/engine-source.ts";
import type { GpuInfo } from "../../src/gpu/nvidia-smi.ts";
import { CODE_CONFIG_FILES, type ModelInfo } from "../../src/hub/types.ts";
import { weightFiles } from "../../src/hub/weight-files.ts";
import type { PlanInput } from "../../src/plan/plan-input.ts";
import type { HostFacts, ModelFacts } from "../../src/plan/types.ts";
import { gpuSet } from "../../testbench/gpu-host/shims/gpu-sets.mjs";
import { defaultSha, type MakeModelOptions, type ModelPreset, makeModel } from "../../testbench/hub/index.ts";

/** Planner inputs built from the bench's real-checkpoint presets and GPU sets (claimed, real sizes). */

export const GiB = 1024 ** 3;

/** The GPUs of a simulated GPU set as nvidia-smi reports them idle. */
export function gpusOf(set: string): GpuInfo[] {
  return gpuSet(set).map((g) => {
    const [major, minor] = g.computeCap.split(".").map(Number) as [number, number];
    return {
      index: g.index,
      name: g.name,
      uuid: g.uuid,
      memoryTotalMiB: g.memoryTotalMiB,
      memoryUsedMiB: 0,
      memoryFreeMiB: g.memoryTotalMiB - g.reservedMiB,
      utilizationPct: 0,
      temperatureC: g.idleTempC,
      powerDrawW: g.idlePowerW,
      computeCapability: { major, minor },
      driverVersion: "580.159.04",
    };
  });
}

/** What resolve would learn from the Hub for a preset checkpoint at its real size (or as `sizes` says). */
export function modelInfoOf(preset: ModelPreset, sizes: MakeModelOptions = { sizes: "claimed" }): ModelInfo {
  const sim = makeModel(preset, sizes);
  const files = sim.files.map((f) => ({ path: f.path, size: f.size }));
  const text = (path: string) => {
    const content = sim.files.find((f) => f.path === path)?.content;
    return content === undefined ? undefined : String(content);
  };
  const config = JSON.parse(text("config.json") ?? "{}") as Record<string, unknown>;
  const hfQuant = text("hf_quant_config.json");
  const quantConfig =
    hfQuant !== undefined
      ? (JSON.parse(hfQuant) as Record<string, unknown>)
      : (config.quantization_config as Record<string, unknown> | undefined);
  const codeConfigs: Record<string, Record<string, unknown>> = {};
  for (const name of CODE_CONFIG_FILES) {
    const content = text(name);
    if (content !== undefined) codeConfigs[name] = JSON.parse(content) as Record<string, unknown>;
  }
  return {
    repo: sim.id,
    revision: "main",
    sha: defaultSha(sim.id),
    files,
    totalBytes: files.reduce((s, f) => s + f.size, 0),
    weightBytes: weightFiles(files).reduce((s, f) => s + f.size, 0),
    gated: sim.gated ?? false,
    license: sim.license,
    config,
    quantConfig,
    codeConfigs,
  };
}

/** Facts as model-facts.ts reads them from each preset's config.json (written out here on purpose). */
export function factsOf(preset: "qwen3.5-moe-nvfp4" | "kimi-k2-int4" | "llama-bf16-small"): ModelFacts {
  const weightBytes = modelInfoOf(preset).weightBytes;
  switch (preset) {
    case "qwen3.5-moe-nvfp4":
      return {
        family: "qwen3.5-moe",
        architecture: "Qwen3_5MoeForConditionalGeneration",
        modelType: "qwen3_5_moe",
        textModelType: "qwen3_5_moe_text",
        quantization: "nvfp4",
        quant: {
          format: "nvfp4",
          method: "modelopt",
          description: "ModelOpt NVFP4 (4-bit float weights and activations, FP8 scales per group of 16)",
          weightBits: 4,
          activationBits: 4,
          groupSize: 16,
          source: "config.json quantization_config",
        },
        attentionHeads: 32,
        kvHeads: 2,
        layers: 60,
        hiddenSize: 4096,
        headDim: 256,
        // 15 of its 60 layers are full attention, the rest Gated DeltaNet (layer_types)
        fullAttentionLayers: 15,
        experts: 512,
        maxContext: 262144,
        weightBytes,
        needsRemoteCode: false,
      };
    case "kimi-k2-int4":
      return {
        family: "kimi-k2",
        architecture: "DeepseekV3ForCausalLM",
        modelType: "kimi_k2",
        quantization: "int4",
        quant: {
          format: "int4",
          method: "compressed-tensors",
          description: "compressed-tensors W4A16 INT4 (pack-quantized, group 32)",
          weightBits: 4,
          activationBits: 16,
          scheme: "group",
          groupSize: 32,
          source: "config.json quantization_config",
        },
        attentionHeads: 64,
        kvHeads: 64,
        layers: 61,
        hiddenSize: 7168,
        headDim: 192,
        kvLoraRank: 512,
        qkRopeHeadDim: 64,
        experts: 384,
        maxContext: 262144,
        weightBytes,
        needsRemoteCode: true,
        // config.json's auto_map names the DeepSeek-V3 config and model, tokenizer_config.json's the tokenizer
        remoteCode: {
          files: [
            { file: "configuration_deepseek.py", namedBy: ["config.json"] },
            { file: "modeling_deepseek.py", namedBy: ["config.json"] },
            { file: "tokenization_kimi.py", namedBy: ["tokenizer_config.json"] },
          ],
          moreFiles: 0,
          otherRepos: [],
          moreOtherRepos: 0,
          unreadable: [],
          moreUnreadable: 0,
          otherPy: [],
          moreOtherPy: 0,
        },
      };
    case "llama-bf16-small":
      return {
        family: "llama",
        architecture: "LlamaForCausalLM",
        modelType: "llama",
        quantization: "bf16",
        quant: {
          format: "bf16",
          method: "none",
          description: "BF16 weights, not quantized",
          weightBits: 16,
          source: "config.json torch_dtype",
        },
        attentionHeads: 32,
        kvHeads: 8,
        layers: 16,
        hiddenSize: 2048,
        headDim: 64,
        experts: undefined,
        maxContext: 131072,
        weightBytes,
        needsRemoteCode: false,
      };
  }
}

export const KIMI_UNIT = `[Unit]
Description=SGLang Kimi K2
After=network-online.target

[Service]
Environment=HF_HUB_OFFLINE=1
ExecStart=/opt/sglang/.venv/bin/python -m sglang.launch_server --model-path /models/moonshotai--Kimi-K2-Thinking--0123456789ab --tp 8 --trust-remote-code --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 --port 30000
Restart=on-failure

[Install]
WantedBy=multi-user.target
`;

export function hostFactsOf(set: string, overrides: Partial<HostFacts> = {}): HostFacts {
  return {
    host: set.startsWith("8x-rtx") ? "gpu-blackwell" : set === "h200-1gpu" ? "gpu-h200" : `gpu-${set}`,
    gpus: gpusOf(set),
    freeDiskBytes: 7.1e12,
    bytesOnDisk: 0,
    memoryBytes: 2048 * GiB,
    venvOk: true,
    hubCli: "hf",
    currentUnit: {
      name: "sglang-kimi.service",
      exists: true,
      active: true,
      text: KIMI_UNIT,
      execStart: KIMI_UNIT.split("ExecStart=")[1]!.split("\n")[0]!.split(" "),
    },
    ...overrides,
  };
}

export function planInput(
  preset: "qwen3.5-moe-nvfp4" | "kimi-k2-int4" | "llama-bf16-small",
  set: string,
  extra: {
    host?: Partial<HostFacts>;
    requestedTp?: number;
    facts?: Partial<ModelFacts>;
    remoteCodeOrgs?: string[];
  } = {},
): PlanInput {
  const host = hostFactsOf(set, extra.host);
  return {
    model: modelInfoOf(preset),
    facts: { ...factsOf(preset), ...extra.facts },
    host,
    hostConfig: {
      name: host.host,
      modelsDir: "/models",
      venv: "/opt/sglang/.venv",
      unitDir: "/etc/systemd/system",
      servingPort: 30000,
      currentUnit: "sglang-kimi.service",
    },
    ...(extra.requestedTp === undefined ? {} : { requestedTp: extra.requestedTp }),
    swapId: "sw-20261129-0001",
    engineKind: "sglang",
    engine: ENGINE_MAIN,
    // the presets' own orgs are trusted here; the remote-code check has tests of its own
    remoteCodeOrgs: extra.remoteCodeOrgs ?? [modelInfoOf(preset).repo.split("/")[0]!],
  };
}

/** The engine source of a plan: branch main of the upstream, built in a directory of its own. */
export const ENGINE_MAIN: EngineSource = {
  upstream: "https://github.com/sgl-project/sglang.git",
  ref: "main",
  kind: "branch",
  fullRef: "refs/heads/main",
  commit: "43da92d5c0ffee00112233445566778899aabbcc",
  listed: true,
  buildAfterApproval: false,
  buildDir: "/models/.modelswap/engines/sglang-43da92d5c0ff-sw-20261129-0001",
};
