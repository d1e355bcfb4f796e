import { newSwapId } from "../../src/grammar/swap-id.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";

/** A valid swap record (it passes the store's schema), with the fields a test sets. */
export function aRecord(over: Partial<SwapRecord> = {}): SwapRecord {
  return {
    id: newSwapId(),
    host: "gpu-1",
    requester: "U0ALICE001",
    channel: "C0LLMOPS01",
    createdAt: new Date().toISOString(),
    request: { model: { repo: "org/model", revision: "main" }, dryRun: false, engineRef: "main" },
    step: "resolve",
    stages: newStages(),
    tasks: {},
    ...over,
  };
}
