import { CodedError } from "../errors.ts";
import type { ServerState } from "./front-door.ts";

/**
 * One line of `show servers state <backend>`, format version 1, as HAProxy 2.6 documents it in
 * doc/management.txt ("show servers state [<backend>]"; github haproxy/haproxy, tag v2.6.0, the same
 * text in Debian bookworm's 2.6.12 /usr/share/doc/haproxy/management.txt.gz). The columns are named by
 * the dump's own `#` header line, so a later version that appends columns still parses.
 */
export interface ServerStateLine {
  backend: string;
  name: string;
  address: string;
  port: number;
  /** srv_op_state: 0 stopped (down), 1 starting, 2 running, 3 stopping. */
  operational: 0 | 1 | 2 | 3;
  /** srv_admin_state, a mask (see ADMIN below). */
  admin: number;
  /** srv_check_state, a mask: 0x02 configured, 0x04 enabled. */
  check: number;
}

/** srv_admin_state bits (management.txt): forced, inherited, configured, resolution maintenance; forced and inherited drain. */
const ADMIN = { FMAINT: 0x01, IMAINT: 0x02, CMAINT: 0x04, FDRAIN: 0x08, IDRAIN: 0x10, RMAINT: 0x20 };
const CHECK_ENABLED = 0x04;
const REQUIRED = [
  "be_name",
  "srv_name",
  "srv_addr",
  "srv_op_state",
  "srv_admin_state",
  "srv_check_state",
  "srv_port",
];

export function parseServersState(text: string): ServerStateLine[] {
  const lines = text.split("\n");
  if (lines[0]?.trim() !== "1")
    throw badAnswer(`show servers state began with ${JSON.stringify(lines[0] ?? "")}, not format version 1`);
  const header = lines[1]?.startsWith("# ") ? lines[1].slice(2).trim().split(/\s+/) : [];
  const missing = REQUIRED.filter((column) => !header.includes(column));
  if (missing.length > 0) throw badAnswer(`show servers state has no column ${missing.join(", ")}`);
  const at = (fields: string[], column: string) => fields[header.indexOf(column)] ?? "";
  const out: ServerStateLine[] = [];
  for (const line of lines.slice(2)) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const fields = line.trim().split(/\s+/);
    if (fields.length < header.length) throw badAnswer(`show servers state line has too few fields: ${line}`);
    const operational = Number(at(fields, "srv_op_state"));
    const port = Number(at(fields, "srv_port"));
    const admin = Number(at(fields, "srv_admin_state"));
    const check = Number(at(fields, "srv_check_state"));
    if (
      ![0, 1, 2, 3].includes(operational) ||
      !Number.isInteger(port) ||
      ![admin, check].every(Number.isInteger)
    )
      throw badAnswer(`show servers state line cannot be read: ${line}`);
    out.push({
      backend: at(fields, "be_name"),
      name: at(fields, "srv_name"),
      address: at(fields, "srv_addr"),
      port,
      operational: operational as ServerStateLine["operational"],
      admin,
      check,
    });
  }
  return out;
}

/**
 * The administrative state modelswap speaks of: a forced, inherited or resolution maintenance bit is
 * `maint`, else a drain bit `drain`. CMAINT alone is not maintenance: a server `disabled` in the
 * configuration starts at 0x05 (FMAINT|CMAINT), and `set server … state ready` clears FMAINT only — it
 * then reads 0x04 while it is up and takes requests (observed on 2.6.12; test/front-door).
 */
export function adminState(admin: number): ServerState {
  if (admin & (ADMIN.FMAINT | ADMIN.IMAINT | ADMIN.RMAINT)) return "maint";
  if (admin & (ADMIN.FDRAIN | ADMIN.IDRAIN)) return "drain";
  return "ready";
}

/** Down whenever HAProxy holds it stopped (checked or not: see setHealthChecks); `unchecked` when up without a check. */
export function healthOf(line: ServerStateLine): "up" | "down" | "starting" | "stopping" | "unchecked" {
  if (line.operational === 0) return "down";
  if ((line.check & CHECK_ENABLED) === 0 && line.operational === 2) return "unchecked";
  return (["down", "starting", "up", "stopping"] as const)[line.operational];
}

export function badAnswer(what: string): CodedError {
  return new CodedError(
    "FRONT_DOOR_BAD_ANSWER",
    `HAProxy's Runtime API gave an answer modelswap cannot read: ${what}`,
    "modelswap reads the formats of HAProxy 2.6 (Debian bookworm's haproxy); run that version or a later 2.x, and report the answer if it is one",
  );
}
