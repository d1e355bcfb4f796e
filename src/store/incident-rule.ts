import { readFileSync } from "node:fs";

/*
 * The health monitor's incident rule: how one check of a host changes its counters and its incident. It
 * runs in Redis as one Lua script (incident-rule.lua), so that however many workers check, one alert and
 * one recovery are posted per incident. Its pure TypeScript twin below says the same thing in the
 * language the rest of the rule is read in, and a property test holds the two to the same answers over
 * random histories against a real redis-server (test/store/incident-rule.property.test.ts).
 */

let script: string | undefined;

/** The Lua script, read once beside this module (the build copies it into dist/ with the code). */
export function incidentRuleScript(): string {
  script ??= readFileSync(new URL("./incident-rule.lua", import.meta.url), "utf8");
  return script;
}

/** One recorded check: the script's ARGV, by name. */
export interface CheckInput {
  outcome: "pass" | "fail";
  /** When the check ran (Unix ms). */
  now: number;
  detail: string;
  failureThreshold: number;
  recoveryThreshold: number;
  claimTimeoutMs: number;
  /** How late the check started (ms), and the bound of its histogram bucket; absent off schedule. */
  late?: { ms: number; bound: string };
}

/** A Redis hash: field → value, as Redis keeps them (strings). */
export type Hash = Map<string, string>;

const INCIDENT_FIELDS = ["incSince", "incFirst", "incLast", "incAlertTs", "incClaimedAt", "incModel"];

/** A number as Lua hands it to Redis (`%.14g`: the integers the rule keeps print in full). */
const lua = (n: number): string => String(n);

function hincrby(hash: Hash, field: string, by: number): number {
  const next = Number(hash.get(field) ?? "0") + by;
  hash.set(field, lua(next));
  return next;
}

/**
 * The rule, on the host's hash and the fleet's lateness histogram (both changed in place), with the
 * script's reply: `[kind, count, incSince, incFirst, incLast, incAlertTs, incModel, passSince]`, or
 * `[kind, count]` for a check that changes no incident.
 */
export function applyIncidentRule(host: Hash, histogram: Hash, input: CheckInput): string[] {
  const { outcome, now, detail } = input;
  host.set("lastCheck", lua(now));
  host.set("lastResult", outcome);
  host.set("lastDetail", detail);
  if (input.late !== undefined) {
    hincrby(histogram, `le:${input.late.bound}`, 1);
    hincrby(histogram, "count", 1);
    hincrby(histogram, "sumMs", input.late.ms);
    if (input.late.ms > Number(histogram.get("maxMs") ?? "-1")) histogram.set("maxMs", lua(input.late.ms));
  }
  const open = host.has("incSince");
  const incident = (kind: string, count: number): string[] => [
    kind,
    String(count),
    ...["incSince", "incFirst", "incLast", "incAlertTs", "incModel", "passSince"].map(
      (f) => host.get(f) ?? "",
    ),
  ];
  if (outcome === "fail") {
    const failures = hincrby(host, "failures", 1);
    host.set("passes", "0");
    if (failures === 1) {
      host.set("streakSince", lua(now));
      host.set("streakFirst", detail);
    }
    if (open) {
      host.set("incLast", detail);
      const posted = host.has("incAlertTs");
      const claimed = Number(host.get("incClaimedAt") ?? "0");
      if (!posted && now - claimed >= input.claimTimeoutMs) {
        host.set("incClaimedAt", lua(now));
        return incident("alert", failures);
      }
      return incident("still-down", failures);
    }
    if (failures >= input.failureThreshold) {
      host.set("incSince", host.get("streakSince") ?? lua(now));
      host.set("incFirst", host.get("streakFirst") ?? detail);
      host.set("incLast", detail);
      host.set("incClaimedAt", lua(now));
      return incident("alert", failures);
    }
    return ["failing", String(failures)];
  }
  const passes = hincrby(host, "passes", 1);
  if (passes === 1) host.set("passSince", lua(now));
  host.set("failures", "0");
  host.delete("streakSince");
  host.delete("streakFirst");
  if (!open) return ["healthy", String(passes)];
  if (passes >= input.recoveryThreshold) {
    const closed = incident("recovered", passes);
    for (const field of INCIDENT_FIELDS) host.delete(field);
    return closed;
  }
  return incident("recovering", passes);
}
