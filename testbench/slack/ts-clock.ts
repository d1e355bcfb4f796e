/**
 * Message timestamps as Slack makes them: "1732921158.000100" — unix seconds, a dot, six digits —
 * unique per workspace and strictly increasing, so they sort as strings within the same second count.
 */
export class TsClock {
  private lastMicros = 0;

  constructor(private readonly now: () => number = Date.now) {}

  next(): string {
    let micros = this.now() * 1000;
    if (micros <= this.lastMicros) micros = this.lastMicros + 1;
    this.lastMicros = micros;
    const seconds = Math.floor(micros / 1_000_000);
    const fraction = String(micros % 1_000_000).padStart(6, "0");
    return `${seconds}.${fraction}`;
  }
}

/** Compares two Slack ts strings numerically (seconds, then fraction). */
export function compareTs(a: string, b: string): number {
  const [as = "0", af = "0"] = a.split(".");
  const [bs = "0", bf = "0"] = b.split(".");
  const ds = Number(as) - Number(bs);
  if (ds !== 0) return ds;
  return Number(af.padEnd(6, "0")) - Number(bf.padEnd(6, "0"));
}

/** Seconds (as a number, with fraction) of a Slack ts. */
export function tsToMillis(ts: string): number {
  return Math.round(Number(ts) * 1000);
}
