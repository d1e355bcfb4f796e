import { type ShellCommand, sh } from "../host/shell-quote.ts";

/** The unit properties modelswap reads from `systemctl show`. */
export const UNIT_PROPERTIES = [
  "Id",
  "LoadState",
  "ActiveState",
  "SubState",
  "Result",
  "MainPID",
  "ExecMainStartTimestamp",
  "ActiveEnterTimestamp",
  "UnitFileState",
  "NRestarts",
  "FragmentPath",
] as const;

export interface UnitInfo {
  name: string;
  loadState: string;
  activeState: string;
  subState: string;
  result: string;
  mainPid: number;
  /** When it last entered the active state, if systemd says so. */
  activeSince: Date | undefined;
  unitFileState: string;
  restarts: number;
  fragmentPath: string;
}

export function unitShowCommand(unit: string): ShellCommand {
  return sh`systemctl show ${unit} ${`--property=${UNIT_PROPERTIES.join(",")}`}`;
}

/** Parses `systemctl show` Key=Value lines. */
export function parseUnitShow(unit: string, output: string): UnitInfo {
  const values = new Map<string, string>();
  for (const line of output.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) values.set(line.slice(0, at), line.slice(at + 1));
  }
  const get = (key: string) => values.get(key) ?? "";
  return {
    name: get("Id") || unit,
    loadState: get("LoadState") || "unknown",
    activeState: get("ActiveState") || "unknown",
    subState: get("SubState"),
    result: get("Result"),
    mainPid: Number(get("MainPID")) || 0,
    activeSince: parseSystemdTimestamp(get("ActiveEnterTimestamp") || get("ExecMainStartTimestamp")),
    unitFileState: get("UnitFileState"),
    restarts: Number(get("NRestarts")) || 0,
    fragmentPath: get("FragmentPath"),
  };
}

/** systemd prints timestamps like `Sun 2026-11-29 22:19:18 UTC`; empty or `n/a` when never. */
export function parseSystemdTimestamp(value: string): Date | undefined {
  const match = /^\w{3} (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?: (\S+))?$/.exec(value.trim());
  if (match === null) return undefined;
  const zone = match[3];
  const iso = `${match[1]}T${match[2]}${zone === undefined || zone === "UTC" ? "Z" : ""}`;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
