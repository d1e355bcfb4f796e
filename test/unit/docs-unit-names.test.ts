import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unitNameFor } from "../../src/engine/render-unit.ts";

/** docs/operations.md shows a unit name the bot writes: the one the code writes for that model today. */
describe("docs/operations.md's unit names", () => {
  it("shows the name unitNameFor gives nvidia/Qwen3.5-397B-A17B-NVFP4 at 43da92d", () => {
    const text = readFileSync(
      join(new URL("../../", import.meta.url).pathname, "docs/operations.md"),
      "utf8",
    );
    const shown = /`nvidia\/Qwen3\.5-397B-A17B-NVFP4` at commit `43da92d…` becomes\s+`([^`]+)`/.exec(
      text,
    )?.[1];
    expect(shown).toBe(unitNameFor("nvidia/Qwen3.5-397B-A17B-NVFP4", "43da92d546ab", "sglang"));
  });
});
