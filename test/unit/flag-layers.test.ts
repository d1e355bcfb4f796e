import { describe, expect, it } from "vitest";
import { fileSchema } from "../../src/config/file-schema.ts";
import { servingBuildOf } from "../../src/engine/engine-source.ts";
import { parseSettingSet } from "../../src/grammar/flag-setting.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { chooseEngineRef, flagLayers, profileFor } from "../../src/plan/flag-layers.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { planInput } from "./plan-fixtures.ts";

/* Flags from three places, one policy (issue 28 §4), and the engine ref the host trusts (§5). */

const RTX = "8x-rtx-pro-6000-blackwell";
const flag = (plan: SwapPlan, setting: string) => plan.flags.find((f) => f.setting === setting);
const check = (plan: SwapPlan, id: string) => plan.checks.find((c) => c.id === id)!;

const profile = fileSchema.shape.models.parse([
  {
    model: "nvidia/Qwen3.5-*",
    flags: [
      { setting: "context-length", value: "131072", reason: "our agents send 100k prompts" },
      { setting: "tool-call-parser", value: "qwen25", engines: ["vllm"] },
    ],
    tp: 4,
    engineRef: "v0.5.2",
  },
])[0]!;

describe("--set on /llm swap", () => {
  it("takes name=value and a bare name, repeated; max-model-len is context-length", () => {
    const parsed = parseSwapRequest([
      "nvidia/Qwen3.5-397B-A17B-NVFP4",
      "--set",
      "context-length=32768",
      "--set=enable-metrics",
      "—set",
      "max-model-len=8192",
    ]);
    expect(parsed).toMatchObject({ ok: false, reason: "--set context-length is given twice" });
    const ok = parseSwapRequest(["a/b", "--set", "context-length=32768", "--set=enable-metrics"]);
    expect(ok).toEqual({
      ok: true,
      request: {
        model: { repo: "a/b", revision: "main" },
        host: undefined,
        tp: undefined,
        dryRun: false,
        sets: [{ setting: "context-length", value: "32768" }, { setting: "enable-metrics" }],
      },
    });
    expect(parseSettingSet("max-model-len=8192")).toEqual({ setting: "context-length", value: "8192" });
  });

  it.each([
    "context-length=$(reboot)",
    "context-length=1 2",
    "Context-Length=1",
    "--context-length=1",
    "context-length='x'",
    "a=b`id`",
    "=5",
    "",
  ])("refuses %j, saying what is accepted", (word) => {
    const parsed = parseSwapRequest(["a/b", "--set", word]);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok)
      expect(parsed.reason).toMatch(/^--set needs name=value, the flag's name without its dashes/);
  });
});

describe("the layers: recipes, then the host's house flags, the model's profile, the swap's --set", () => {
  const layers = flagLayers({
    host: {
      name: "gpu-blackwell",
      flags: [
        { setting: "enable-metrics", value: true },
        { setting: "hicache-ratio", value: "2", engines: ["sglang"], reason: "house: RAM is shared" },
        { setting: "context-length", value: "65536" },
      ],
    },
    profile,
    sets: [{ setting: "context-length", value: "32768" }],
    engine: "sglang",
  });
  const plan = makePlan({ ...planInput("qwen3.5-moe-nvfp4", RTX), flagLayers: layers });

  it("a later layer's setting replaces an earlier one's, and the plan says where each came from", () => {
    expect(plan.ok).toBe(true);
    expect(flag(plan, "enable-metrics")).toMatchObject({
      value: undefined,
      from: "host gpu-blackwell (hosts[].flags)",
      reason: "a house flag of gpu-blackwell",
    });
    expect(flag(plan, "hicache-ratio")).toMatchObject({
      value: "2",
      from: "host gpu-blackwell (hosts[].flags)",
      reason: "house: RAM is shared; replaces recipe qwen3.5's 4",
    });
    expect(flag(plan, "context-length")).toMatchObject({
      flag: "--context-length",
      value: "32768",
      from: "swap (--set)",
      reason: expect.stringMatching(
        /^asked for with --set on \/llm swap; replaces profile nvidia\/Qwen3\.5-\* \(models\[\]\)'s 131072/,
      ),
    });
    // a profile's flag for another engine is not set
    expect(flag(plan, "tool-call-parser")).toMatchObject({ value: "qwen3_coder", from: "recipe qwen3.5" });
    expect(plan.unitText).toContain("--context-length 32768");
  });

  it("the fit holds the context the flags give: one 32768-token sequence, in GiB per GPU", () => {
    expect(check(plan, "vram").detail).toMatch(
      /one 32768-token sequence \(context-length 32768 from swap \(--set\)\) needs [0-9.]+ GiB\/GPU of KV cache$/,
    );
  });

  it("vLLM spells context-length --max-model-len, and refuses to start without room for the model's whole context", () => {
    const vllm = makePlan({
      ...planInput("llama-bf16-small", "h200-1gpu"),
      engineKind: "vllm",
      flagLayers: flagLayers({
        host: { name: "h" },
        profile: undefined,
        sets: [{ setting: "context-length", value: "8192" }],
        engine: "vllm",
      }),
    });
    expect(flag(vllm, "context-length")).toMatchObject({ flag: "--max-model-len", value: "8192" });
    const whole = makePlan({ ...planInput("llama-bf16-small", "h200-1gpu"), engineKind: "vllm" });
    expect(check(whole, "vram").detail).toMatch(/one 131072-token sequence \(the model's whole context/);
  });

  it("a context that cannot fit is refused, and the fix names the longest that does", () => {
    const huge = makePlan({
      ...planInput("qwen3.5-moe-nvfp4", RTX),
      flagLayers: [
        { from: "swap (--set)", settings: [{ setting: "context-length", value: "100000000", reason: "r" }] },
      ],
    });
    expect(check(huge, "vram")).toMatchObject({ ok: false });
    expect(check(huge, "vram").detail).toMatch(/one 100000000-token sequence .*: does not fit/);
    expect(check(huge, "vram").fix).toMatch(
      /at tp 8 about [0-9]+ tokens do: set context-length to [0-9]+ or less/,
    );
  });

  it("a served-model-name from the config replaces the Hub id, once", () => {
    const named = makePlan({
      ...planInput("qwen3.5-moe-nvfp4", RTX),
      flagLayers: [
        {
          from: "profile x (models[])",
          settings: [{ setting: "served-model-name", value: "qwen", reason: "clients ask for qwen" }],
        },
      ],
    });
    expect(named.flags.filter((f) => f.setting === "served-model-name")).toEqual([
      expect.objectContaining({ value: "qwen", from: "profile x (models[])" }),
    ]);
  });

  it("no layer sets trust-remote-code, host or port, whatever reaches the planner", () => {
    const sneaky = flagLayers({
      host: { name: "h", flags: [{ setting: "port" as never, value: "1" }] },
      profile: undefined,
      sets: [
        { setting: "trust-remote-code" },
        { setting: "host", value: "0.0.0.0" },
        { setting: "grpc-port", value: "1" },
      ],
      engine: "sglang",
    });
    expect(sneaky).toEqual([]);
  });
});

describe("profiles and the engine ref", () => {
  it("a profile matches its repo or glob, case-insensitively; the first one wins", () => {
    expect(profileFor([profile], "NVIDIA/qwen3.5-397B-A17B-NVFP4")).toBe(profile);
    expect(profileFor([profile], "Qwen/Qwen3-8B")).toBeUndefined();
  });

  it("the ref: the request's, else the profile's, else the host's default, else main — and says which", () => {
    const host = { name: "gpu-1", engineRef: "v0.5.1" };
    expect(chooseEngineRef("v9", profile, host)).toEqual({ ref: "v9", why: "asked for with --engine-ref" });
    expect(chooseEngineRef(undefined, profile, host).ref).toBe("v0.5.2");
    expect(chooseEngineRef(undefined, undefined, host)).toEqual({
      ref: "v0.5.1",
      why: "gpu-1's default, hosts[].engineRef",
    });
    expect(chooseEngineRef(undefined, undefined, { name: "gpu-1" }).ref).toBe("main");
  });

  it("reads the build the serving unit runs from its PYTHONPATH (no rebuild when the ref resolves to its commit)", () => {
    const unit = [
      "[Service]",
      "Environment=PYTHONPATH=/models/.modelswap/engines/sglang-1a2b3c4d5e6f-sw-20261129-0001/python",
      "ExecStart=/opt/sglang/.venv/bin/python -m sglang.launch_server",
    ].join("\n");
    expect(servingBuildOf(unit, "/models/", "sglang")).toEqual({
      buildDir: "/models/.modelswap/engines/sglang-1a2b3c4d5e6f-sw-20261129-0001",
      commit12: "1a2b3c4d5e6f",
    });
    expect(servingBuildOf(unit, "/models", "vllm")).toBeUndefined();
    expect(servingBuildOf(unit, "/srv/other", "sglang")).toBeUndefined();
    expect(servingBuildOf("[Service]\nExecStart=/x", "/models", "sglang")).toBeUndefined();
  });
});

describe("the config's flags", () => {
  it("refuses a house flag, profile flag or settable name that nobody may set", () => {
    const host = fileSchema.shape.hosts.element;
    const bad = fileSchema.shape.models.safeParse([
      { model: "a/b", flags: [{ setting: "trust-remote-code" }, { setting: "host", value: "0.0.0.0" }] },
    ]);
    expect(bad.success).toBe(false);
    expect(bad.error?.issues.map((i) => i.message.split("\n")[0])).toEqual([
      "trust-remote-code is decided from the model repo's files and allowed per org (hub.remoteCodeOrgs), never set",
      "host is the plan's own (model-path, host, port and tp-size follow the host's config and --tp)",
    ]);
    expect(host).toBeDefined();
    const secret = fileSchema.shape.models.safeParse([
      { model: "a/b", flags: [{ setting: "api-key", value: "x" }] },
    ]);
    expect(secret.error?.issues[0]?.message).toMatch(/^api-key is a secret/);
    const notANumber = fileSchema.shape.models.safeParse([
      { model: "a/b", flags: [{ setting: "context-length", value: "32k" }] },
    ]);
    expect(notANumber.error?.issues[0]?.message).toMatch(/^context-length takes a whole number of tokens/);
    const settable = fileSchema.shape.swaps.safeParse({ settable: ["context-length", "port"] });
    expect(settable.success).toBe(false);
    expect(fileSchema.shape.swaps.parse({}).settable).toEqual([]);
  });
});
