import { describe, expect, it } from "vitest";
import { adminState, healthOf, parseServersState } from "../../src/front-door/parse-servers-state.ts";
import { parseStatCsv } from "../../src/front-door/parse-stat-csv.ts";

/**
 * The Runtime API parsers on answers captured from HAProxy 2.6.12 (Debian bookworm), and on the edges
 * management.txt allows: quoted CSV fields, comment lines, columns a later version appends.
 */
const SERVERS_STATE = `1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port
3 be 1 blue 127.0.0.1 2 0 1 1 1 1 0 2 0 0 0 0 - 18081 - 0 0 - - 0
3 be 2 green 127.0.0.1 0 5 1 1 1 1 0 0 8 0 0 0 - 18082 - 0 0 - - 0

`;

describe("show servers state (format 1)", () => {
  it("reads each server's name, address, port and states from a real 2.6.12 answer", () => {
    const lines = parseServersState(SERVERS_STATE);
    expect(lines.map((l) => [l.name, l.address, l.port, adminState(l.admin), healthOf(l)])).toEqual([
      ["blue", "127.0.0.1", 18081, "ready", "unchecked"],
      ["green", "127.0.0.1", 18082, "maint", "down"],
    ]);
  });

  it("maps the admin mask: forced/inherited/resolution maintenance, drain, and configured-disabled alone is not maint", () => {
    expect([0x01, 0x02, 0x20, 0x05, 0x09].map(adminState)).toEqual([
      "maint",
      "maint",
      "maint",
      "maint",
      "maint",
    ]);
    expect([0x08, 0x10, 0x0c].map(adminState)).toEqual(["drain", "drain", "drain"]);
    expect([0x00, 0x04, 0x40].map(adminState)).toEqual(["ready", "ready", "ready"]);
  });

  it("reads columns by the header, so appended columns and comment lines do not matter", () => {
    const text = SERVERS_STATE.replace("srv_agent_port", "srv_agent_port srv_new_column")
      .replace(/ 0\n3 be 2/, " 0 x\n# a comment\n3 be 2")
      .replace(/- - 0\n\n$/, "- - 0 y\n\n");
    expect(parseServersState(text).map((l) => l.port)).toEqual([18081, 18082]);
  });

  it("refuses another format version, a missing column or a short line", () => {
    expect(() => parseServersState(SERVERS_STATE.replace(/^1/, "2"))).toThrow(/not format version 1/);
    expect(() => parseServersState(SERVERS_STATE.replace(" srv_port", " srv_prt"))).toThrow(
      /no column srv_port/,
    );
    expect(() => parseServersState(SERVERS_STATE.replace(" - - 0\n3 be 2", "\n3 be 2"))).toThrow(
      /too few fields/,
    );
  });
});

describe("show stat (CSV)", () => {
  const header = "# pxname,svname,qcur,qmax,scur,smax,status,last_chk,-";
  it("splits quoted fields with commas and doubled quotes", () => {
    const rows = parseStatCsv(
      `${header}\nsglang,blue,0,0,3,4,UP,"HTTP status check returned code <3C>503, ""busy""",\n\n`,
    );
    expect(rows[0]).toMatchObject({
      pxname: "sglang",
      svname: "blue",
      scur: "3",
      last_chk: 'HTTP status check returned code <3C>503, "busy"',
    });
  });

  it("refuses an answer without its header, or cut before its closing empty line", () => {
    expect(() => parseStatCsv("No such proxy.\n\n")).toThrow(/did not begin/);
    expect(() => parseStatCsv(`${header}\nsglang,blue,0,0,3,4,UP,,\n`)).toThrow(/the answer was cut/);
  });
});
