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
 * the canary's. `canary` is "canary" when this wave is the canary (its figures set the bar), else the
 * canary's figure, undefined when it has none. With the throughput part on (a margin under 100 %), no
 * figure never passes: a swap's benchmark failing does not fail the swap, so a canary without one would
 * otherwise wave every later host through unmeasured, and a host without one cannot be said to be as fast.
 */
export function judgeWave(
  members: readonly WaveMember[],
  canary: "canary" | number | undefined,
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
  if (marginPercent >= 100) return { passed: true, tokS };
  if (canary === "canary") {
    const unmeasured = members.filter((m) => tokS[m.host] === undefined).map((m) => m.host);
    if (unmeasured.length === 0) return { passed: true, tokS };
    return {
      passed: false,
      why: `${unmeasured.join(", ")} ${unmeasured.length === 1 ? "has" : "have"} no benchmark figure: the canary's output tok/s is what later waves are held to`,
      tokS,
    };
  }
  if (canary === undefined)
    return {
      passed: false,
      why: `the canary has no benchmark figure to hold ${members.map((m) => m.host).join(", ")} to (throughputMargin ${marginPercent} %)`,
      tokS,
    };
  const floor = canary * (1 - marginPercent / 100);
  const slow = members.filter((m) => (tokS[m.host] ?? -1) < floor);
  if (slow.length > 0) {
    const said = slow.map((m) =>
      tokS[m.host] === undefined
        ? `${m.host} has no benchmark figure`
        : `${m.host} ${tokS[m.host]!.toFixed(1)} tok/s`,
    );
    return {
      passed: false,
      why: `${said.join(", ")}: more than ${marginPercent} % below the canary's ${canary.toFixed(1)} tok/s (at least ${floor.toFixed(1)} passes)`,
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
