import { expect } from "vitest";
import { smokeTest } from "../support/bench-smoke.ts";

smokeTest("swaps", (results) => {
  expect(results.ack!.requests).toBeGreaterThan(0);
  expect(results.concurrent!.swaps).toBeGreaterThan(0);
});
