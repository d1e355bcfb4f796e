import { describe, expect, it } from "vitest";
import { knownHostsLine, refuseUnknownHost } from "../../commands/host-arg.ts";

/** Replies that name the configured hosts stay readable, and within Slack's limits, at any fleet size. */
describe("naming the known hosts in a reply", () => {
  const fleet = Array.from({ length: 1000 }, (_, i) => `gpu-${String(i).padStart(4, "0")}`);

  it("names every host of a small fleet", () => {
    expect(knownHostsLine(["gpu-1", "gpu-2", "h200"])).toBe("Known hosts: gpu-1, gpu-2, h200.");
  });

  it("for a thousand hosts, names the closest to what was typed, the first few, and the count", () => {
    const refused = refuseUnknownHost("gpu-0420x", fleet)!;
    expect(refused).toBe(
      "Unknown host `gpu-0420x`. Did you mean gpu-0420? Known hosts: gpu-0000, gpu-0001, gpu-0002, gpu-0003, gpu-0004, … (1000 in all; `/llm status` lists them).",
    );
    expect(refused.length).toBeLessThan(300);
    expect(knownHostsLine(fleet)).not.toContain("Did you mean");
    expect(refuseUnknownHost("gpu-0420", fleet)).toBeUndefined();
  });
});

describe("/llm status --all", () => {
  it("asks for the whole fleet table; with a host it is refused, saying why and changing nothing", async () => {
    const { parseStatusArgs } = await import("../../commands/status.ts");
    expect(parseStatusArgs(["--all"])).toEqual({ ok: true, share: false, all: true });
    expect(parseStatusArgs(["--share", "—all"])).toEqual({ ok: true, share: true, all: true });
    expect(parseStatusArgs(["gpu-1", "--all"])).toEqual({
      ok: false,
      reason: "`--all` is the whole fleet's table: leave out the host, or leave out `--all`",
    });
    expect(parseStatusArgs(["--all", "--all"])).toMatchObject({
      ok: false,
      reason: "`--all` is given twice",
    });
    expect(parseStatusArgs(["--all=yes"])).toMatchObject({ ok: false, reason: "`--all` takes no value" });
  });
});
