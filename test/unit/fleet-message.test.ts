import { describe, expect, it } from "vitest";
import { type FleetRow, renderFleet } from "../../src/reporter/fleet-message.ts";
import type { HostStatus } from "../../src/status/probe-host.ts";

function status(host: string, verdict: HostStatus["verdict"], model?: string): HostStatus {
  return {
    host,
    unitName: `sglang-${host}.service`,
    port: 30000,
    healthLabel: "/health_generate",
    checkedAt: new Date(),
    durationMs: 5,
    verdict,
    connection:
      verdict === "unreachable" ? { code: "HOST_UNREACHABLE", message: "down", fix: "check it" } : undefined,
    unit: undefined,
    gpus: [],
    gpuProblem: undefined,
    server:
      model === undefined
        ? undefined
        : { healthStatus: 200, healthError: undefined, models: [model], modelRoots: [] },
    journalTail: [],
  };
}

describe("renderFleet", () => {
  it("names a model served from a path by the path's meaningful end, as the alert does", () => {
    const path =
      "/mnt/shared/hf-cache/hub/models--meta-llama--Llama-3.2-1B-Instruct/snapshots/4e20de362430cd3b72f300e6b0f18e50e7166e08";
    const body = JSON.stringify(renderFleet([{ status: status("gpu-1", "healthy", path) }]).blocks);
    expect(body).toContain("meta-llama/Llama-3.2-1B-Instruct");
    expect(body).not.toContain("/mnt/shared/hf-cache");
  });

  it("shows every host on one line: state, model, unit, active swap or last outcome", () => {
    const rows: FleetRow[] = [
      { status: status("gpu-1", "healthy", "Qwen/Qwen3-8B"), last: { outcome: "rolled_back", repo: "x/y" } },
      { status: status("gpu-2", "failed"), active: { id: "sw-1", step: "health", repo: "nvidia/Qwen3.5" } },
      { status: status("gpu-3", "unreachable") },
    ];
    const msg = renderFleet(rows);
    const body = JSON.stringify(msg.blocks);
    expect(msg.text).toContain("Fleet: 3 hosts, 1 healthy");
    expect(body).toContain("gpu-1");
    expect(body).toContain("last: rolled back");
    expect(body).toContain("swapping to nvidia/Qwen3.5 (health)");
    expect(body).toContain("⚫ unreachable");
  });

  it("stays within Slack's limits for a big fleet", () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({
      status: status(`gpu-${i}`, "healthy", `org/${"very-long-model-name-".repeat(5)}${i}`),
    }));
    const msg = renderFleet(rows);
    expect(msg.blocks.length).toBeLessThanOrEqual(50);
    for (const block of msg.blocks) {
      if (block.type === "section" && block.text) expect(block.text.text.length).toBeLessThanOrEqual(3000);
    }
    expect(JSON.stringify(msg.blocks)).toContain("gpu-199");
  });
});
