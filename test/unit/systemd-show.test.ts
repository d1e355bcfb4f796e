import { describe, expect, it } from "vitest";
import { parseSystemdTimestamp, parseUnitShow } from "../../src/status/systemd-show.ts";

describe("parseUnitShow", () => {
  it("reads systemctl show output", () => {
    const unit = parseUnitShow(
      "sglang-qwen.service",
      [
        "Id=sglang-qwen.service",
        "LoadState=loaded",
        "ActiveState=failed",
        "SubState=failed",
        "Result=exit-code",
        "MainPID=0",
        "ExecMainStartTimestamp=Sun 2026-11-29 22:19:18 UTC",
        "ActiveEnterTimestamp=",
        "UnitFileState=enabled",
        "NRestarts=5",
        "FragmentPath=/etc/systemd/system/sglang-qwen.service",
      ].join("\n"),
    );
    expect(unit).toMatchObject({
      activeState: "failed",
      result: "exit-code",
      restarts: 5,
      unitFileState: "enabled",
    });
    expect(unit.activeSince?.toISOString()).toBe("2026-11-29T22:19:18.000Z");
  });

  it("reports a unit systemd does not know", () => {
    const unit = parseUnitShow(
      "nope.service",
      "Id=nope.service\nLoadState=not-found\nActiveState=inactive\n",
    );
    expect(unit.loadState).toBe("not-found");
    expect(unit.activeSince).toBeUndefined();
  });

  it("ignores empty and n/a timestamps", () => {
    expect(parseSystemdTimestamp("")).toBeUndefined();
    expect(parseSystemdTimestamp("n/a")).toBeUndefined();
  });
});
