import { describe, expect, it } from "vitest";
import { fileSchema } from "../../src/config/file-schema.ts";
import { reactionDecision } from "../../src/grammar/action-ids.ts";
import { isEngineRef } from "../../src/grammar/engine-ref.ts";
import { isHostName } from "../../src/grammar/host-name.ts";
import { isSwapId, newSwapId, SWAP_ID_EXAMPLE } from "../../src/grammar/swap-id.ts";

describe("the one input grammar", () => {
  it("makes swap ids that its own pattern (and so /llm cancel) accepts, and refuses look-alikes", () => {
    for (let i = 0; i < 50; i++) expect(isSwapId(newSwapId())).toBe(true);
    expect(isSwapId(newSwapId(0))).toBe(true);
    expect(isSwapId(SWAP_ID_EXAMPLE)).toBe(true);
    for (const bad of [
      "sw-",
      "sw-abc",
      "sw-ABC-123456",
      "sw-abc-12345g",
      "sw-a-b-123456",
      "x-abc-123456",
      "sw-abc-123456\n",
    ])
      expect(isSwapId(bad), bad).toBe(false);
  });

  it("reads host names the same in the config and in commands", () => {
    const config = (name: string) =>
      fileSchema.safeParse({
        slack: { channel: "C0LLMOPS01" },
        requesters: { users: ["U0ALICE001"] },
        approvers: { users: ["U0BOB00001"] },
        hosts: [
          {
            name,
            local: true,
            modelsDir: "/srv/models",
            engineSourceDir: "/srv/sglang",
            venv: "/srv/venv",
            currentUnit: "sglang.service",
          },
        ],
      }).success;
    for (const name of ["gpu-1", "h200", "a", "0-x", "gpu-1; reboot", "GPU-1", "-gpu", "g".repeat(41), ""]) {
      expect(config(name), name).toBe(isHostName(name));
    }
  });

  it("admits engine refs git would accept as plain branches, tags or commits, nothing that reads as more", () => {
    for (const ok of ["main", "v0.5.2", "release/v0.5", "1a2b3c4d", "feature_x"])
      expect(isEngineRef(ok), ok).toBe(true);
    for (const bad of ["", "-x", "a..b", "main/", "x.lock", "$(id)", "a b", "refs;rm"])
      expect(isEngineRef(bad), bad).toBe(false);
  });

  it("decides only with the ✅ and ❌ reactions", () => {
    expect(reactionDecision("white_check_mark")).toBe(true);
    expect(reactionDecision("heavy_check_mark")).toBe(true);
    expect(reactionDecision("x")).toBe(false);
    expect(reactionDecision("thumbsup")).toBeUndefined();
  });
});
