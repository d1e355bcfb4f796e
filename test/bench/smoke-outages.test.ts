import { expect } from "vitest";
import { smokeTest } from "../support/bench-smoke.ts";

smokeTest("outages", (results) => {
  expect(results.failover).toMatchObject({
    sentinel: { outcome: "swapped" },
    cluster: { outcome: "swapped" },
  });
});
