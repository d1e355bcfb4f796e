/** A duration for people: "42 s", "12 min", "1.5 h". */
export function formatSeconds(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/** Seconds a person reads, with tenths below 10 s (a drain of 0.4 s is not "0 s"). */
export function shortSeconds(seconds: number): string {
  return seconds < 10 ? `${seconds.toFixed(1)} s` : formatSeconds(seconds);
}

/** A moment as people in the channel read it: "2026-12-02 18:40:12 UTC". */
export function utcTime(date: Date | string): string {
  const d = typeof date === "string" ? new Date(date) : date;
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}
