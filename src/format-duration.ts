import type { Duration, Locale } from "date-fns";
import { formatDuration } from "date-fns/formatDuration";

/**
 * date-fns's formatDuration with the units people in an ops channel read ("12 min", "2 h 5 min"): its
 * locale hook (formatDistance, called with the token `x<Unit>` and the count) writes the short unit.
 */
const SHORT_UNIT: Record<string, string> = {
  xSeconds: "s",
  xMinutes: "min",
  xHours: "h",
  xDays: "d",
};
const SHORT: Locale = {
  code: "en-short",
  formatDistance: (token: string, count: number) => `${count} ${SHORT_UNIT[token] ?? token}`,
} as Locale;

const UNITS = [
  ["days", 86_400],
  ["hours", 3600],
  ["minutes", 60],
  ["seconds", 1],
] as const;

/**
 * Every duration a person reads, in one form: tenths below 10 s ("0.4 s": a drain is not "0 s"), whole
 * seconds below a minute ("42 s"), else the two largest units, rounded on the smaller one ("1 min 4 s",
 * "12 min", "2 h 5 min", "3 d 4 h"). A negative or non-finite duration reads as 0 s.
 */
export function duration(seconds: number): string {
  const s = Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
  if (s < 9.95) return `${s.toFixed(1).replace(/\.0$/, "")} s`;
  const largest = UNITS.findIndex(([, size]) => Math.round(s) >= size);
  const [big, bigSize] = UNITS[largest]!;
  const small = UNITS[largest + 1];
  if (small === undefined) return formatDuration({ seconds: Math.round(s) }, { locale: SHORT });
  // rounded on the smaller unit first, so 59 min 59.6 s is "1 h", never "59 min 60 s"
  const inSmall = Math.round(s / small[1]);
  const bigger = UNITS[largest - 1];
  if (bigger !== undefined && inSmall * small[1] >= bigger[1]) return duration(inSmall * small[1]);
  const perBig = bigSize / small[1];
  const parts: Duration = { [big]: Math.floor(inSmall / perBig), [small[0]]: inSmall % perBig };
  return formatDuration(parts, { format: [big, small[0]], locale: SHORT });
}

/**
 * An estimate, in the same form without false precision: to 10 s below 10 min ("about 6 min 30 s"), to
 * the minute below 2 h, to 10 min above.
 */
export function roughly(seconds: number): string {
  const step = seconds < 600 ? 10 : seconds < 7200 ? 60 : 600;
  return duration(seconds < 10 ? seconds : Math.round(seconds / step) * step);
}

/** How long from `since` to `now`, as `duration` writes it ("up 3 min 12 s", "2 h 5 min ago"). */
export function durationSince(since: Date | string, now: Date | number = Date.now()): string {
  return duration((+now - +new Date(since)) / 1000);
}

/** A moment as people in the channel read it: "2026-12-02 18:40:12 UTC". */
export function utcTime(date: Date | string): string {
  const d = typeof date === "string" ? new Date(date) : date;
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}
