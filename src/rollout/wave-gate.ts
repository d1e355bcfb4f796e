import type { SwapRecord } from "../swap/swap-record.ts";

/** One host of a wave as the gate sees it: its swap's record once it has ended. */
export interface WaveMember {
  host: string;
  record: Pick<SwapRecord, "outcome" | "reason" | "benchmark">;
}

export type WaveVerdict =
  | { passed: true; tokS: Record<string, number> }
  | { passed: false; why: string; tokS: Record<string, number> };

/**
 * The gate between waves: every host of the wave succeeded (its swap's own checks: health, sanity, the
 * benchmark, the last check), and each host's single-stream output tok/s is within `marginPercent` below
 * the canary's (`canaryTokS`; undefined for the canary wave itself, which sets it). A host with no
 * figure where the canary had one does not pass: the gate cannot say it is as fast.
 */
export function judgeWave(
  members: readonly WaveMember[],
  canaryTokS: number | undefined,
  marginPercent: number,
): WaveVerdict {
  const tokS: Record<string, number> = {};
  for (const m of members) {
    const out = m.record.benchmark?.single.outputThroughput;
    if (out !== undefined) tokS[m.host] = out;
  }
  const failed = members.filter((m) => m.record.outcome !== "succeeded");
  if (failed.length > 0) {
    const said = failed.map(
      (m) =>
        `${m.host} ${outcomeWords(m.record.outcome)}${m.record.reason === undefined ? "" : ` (${m.record.reason})`}`,
    );
    return { passed: false, why: said.join("; "), tokS };
  }
  if (canaryTokS === undefined || marginPercent >= 100) return { passed: true, tokS };
  const floor = canaryTokS * (1 - marginPercent / 100);
  const slow = members.filter((m) => (tokS[m.host] ?? -1) < floor);
  if (slow.length > 0) {
    const said = slow.map((m) =>
      tokS[m.host] === undefined
        ? `${m.host} has no benchmark figure`
        : `${m.host} ${tokS[m.host]!.toFixed(1)} tok/s`,
    );
    return {
      passed: false,
      why: `${said.join(", ")}: more than ${marginPercent} % below the canary's ${canaryTokS.toFixed(1)} tok/s (at least ${floor.toFixed(1)} passes)`,
      tokS,
    };
  }
  return { passed: true, tokS };
}

function outcomeWords(outcome: SwapRecord["outcome"]): string {
  switch (outcome) {
    case undefined:
      return "has not ended";
    case "rolled_back":
      return "was rolled back";
    default:
      return outcome;
  }
}
