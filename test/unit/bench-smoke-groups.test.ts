import { expect, it } from "vitest";
import { RESULT_KEYS } from "../../bench/report.ts";
import { SMOKE_GROUPS } from "../support/bench-smoke.ts";

it("the quick bench's smoke files run every section once: a new section cannot go unrun", () => {
  const grouped = Object.values(SMOKE_GROUPS).flat();
  expect([...grouped].sort()).toEqual(Object.keys(RESULT_KEYS).sort());
});
