import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { duration, durationSince, roughly } from "../../src/format-duration.ts";

describe("duration: every duration a person reads, in one form", () => {
  it.each([
    [0, "0 s"],
    [0.4, "0.4 s"],
    [9.94, "9.9 s"],
    [9.96, "10 s"],
    [42, "42 s"],
    [59.4, "59 s"],
    // rounded on the smaller unit first: never "60 s" or "59 min 60 s"
    [59.6, "1 min"],
    [64, "1 min 4 s"],
    [720, "12 min"],
    [3599.6, "1 h"],
    [7500, "2 h 5 min"],
    [86_399, "1 d"],
    [90_000, "1 d 1 h"],
    [-3, "0 s"],
    [Number.NaN, "0 s"],
  ])("%s s → %s", (seconds, text) => {
    expect(duration(seconds)).toBe(text);
  });

  it("says a limit that was passed, however little: not healthy after 20 min 1 s (limit 20 min)", () => {
    expect(`not healthy after ${duration(1201)} (limit ${duration(1200)})`).toBe(
      "not healthy after 20 min 1 s (limit 20 min)",
    );
  });

  it("writes estimates without false precision, in the same form", () => {
    expect(roughly(148.7)).toBe("2 min 30 s");
    expect(roughly(389)).toBe("6 min 30 s");
    expect(roughly(4000)).toBe("1 h 7 min");
    expect(roughly(4.2)).toBe("4.2 s");
  });

  it("measures from a moment to now", () => {
    expect(durationSince("2026-12-06T10:00:00Z", Date.parse("2026-12-06T10:03:12Z"))).toBe("3 min 12 s");
  });
});

describe("the one formatter", () => {
  const ROOT = new URL("../../", import.meta.url).pathname;
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
    });

  it("is the only one: no other code writes minutes or hours by hand, or uses date-fns's distance words", () => {
    const handWritten = /\/ ?60(_000)?\)?[^`]{0,40}\} ?min\b|\/ ?3600\)?[^`]{0,40}\} ?h\b|formatDistance/;
    const offenders = ["src", "jobs", "commands"]
      .flatMap((dir) => files(join(ROOT, dir)))
      .filter((path) => !path.endsWith("src/format-duration.ts"))
      .filter((path) => handWritten.test(readFileSync(path, "utf8")));
    expect(offenders.map((path) => path.slice(ROOT.length))).toEqual([]);
  });
});
