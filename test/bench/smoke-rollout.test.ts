import { smokeTest } from "../support/bench-smoke.ts";

smokeTest("rollout");
