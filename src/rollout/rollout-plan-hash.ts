import { createHash } from "node:crypto";
import type { RolloutRecord } from "./rollout-record.ts";

/** The plan hash of a rollout: its hosts' plan hashes, in wave order, and its policy. */
export function rolloutPlanHash(record: Pick<RolloutRecord, "hosts" | "policy">): string {
  const parts = record.hosts.map((h) => `${h.wave}:${h.host}:${h.planHash ?? ""}`);
  return createHash("sha256")
    .update(JSON.stringify([parts, record.policy]))
    .digest("hex")
    .slice(0, 16);
}
