import { CodedError } from "../errors.ts";
import type { CommandRunner } from "../host/transport.ts";
import type { FrontDoor, FrontDoorServer, ServerState } from "./front-door.ts";
import {
  frontDoorName,
  type HaproxyFrontDoorOptions,
  haproxyFrontDoorOptions,
  serverAddress,
  serverPort,
  serverState,
} from "./haproxy-options.ts";
import { adminState, badAnswer, healthOf, parseServersState } from "./parse-servers-state.ts";
import { parseStatCsv } from "./parse-stat-csv.ts";
import { type RuntimeApiTarget, runtimeCommand, runtimeCommands } from "./runtime-api.ts";

/**
 * The front door as HAProxy's Runtime API (2.6, Debian bookworm) on the GPU host: `show servers state`
 * and `show stat` read the slots, `set server <backend>/<server> state ready|drain|maint` and
 * `set server … addr <ip> port <port>` steer them. It changes nothing else: no configuration file, no
 * reload, no other backend. Every name, address and port is admitted by a zod schema before it is put
 * into a command; every change is read back before it counts as done.
 */
export class HaproxyFrontDoor implements FrontDoor {
  readonly description: string;
  readonly backend: string;
  private readonly target: RuntimeApiTarget;

  constructor(transport: CommandRunner, options: HaproxyFrontDoorOptions) {
    const o = haproxyFrontDoorOptions.parse(options);
    this.backend = o.backend;
    this.target = { transport, socket: o.socket, sudo: o.sudo, timeoutMs: o.commandTimeoutMs };
    this.description = `HAProxy backend ${o.backend} (socket ${o.socket} on ${transport.hostName})`;
  }

  async servers(): Promise<FrontDoorServer[]> {
    const state = await this.ask(`show servers state ${this.backend}`);
    const lines = parseServersState(state).filter((l) => l.backend === this.backend);
    const stats = await this.stats();
    return lines.map((line) => {
      const row = stats.get(line.name);
      return {
        name: line.name,
        state: adminState(line.admin),
        health: healthOf(line),
        address: line.address,
        port: line.port,
        sessions: row?.scur ?? 0,
        queued: row?.qcur ?? 0,
      };
    });
  }

  async server(name: string): Promise<FrontDoorServer> {
    const server = frontDoorName.parse(name);
    const found = (await this.servers()).find((s) => s.name === server);
    if (found === undefined) throw this.unknown(`no server ${server} in`);
    return found;
  }

  async setState(name: string, state: ServerState): Promise<void> {
    const server = frontDoorName.parse(name);
    const wanted = serverState.parse(state);
    await this.change(`set server ${this.backend}/${server} state ${wanted}`, /^$/);
    const now = await this.server(server);
    if (now.state !== wanted)
      throw this.refused(`${server} is ${now.state} after "set server … state ${wanted}"`, "");
  }

  async setStates(changes: readonly (readonly [server: string, state: ServerState])[]): Promise<void> {
    const wanted = changes.map(
      ([name, state]) => [frontDoorName.parse(name), serverState.parse(state)] as const,
    );
    const commands = wanted.map(([server, state]) => `set server ${this.backend}/${server} state ${state}`);
    const answer = (await runtimeCommands(this.target, commands)).trim();
    this.refusal(answer);
    if (answer !== "")
      throw this.refused(`HAProxy answered "${commands.join("; ")}" with: ${answer}`, answer);
    const now = await this.servers();
    for (const [server, state] of wanted) {
      const found = now.find((s) => s.name === server);
      if (found === undefined) throw this.unknown(`no server ${server} in`);
      if (found.state !== state)
        throw this.refused(`${server} is ${found.state} after "set server … state ${state}"`, "");
    }
  }

  async setAddress(name: string, address: string, port: number): Promise<void> {
    const server = frontDoorName.parse(name);
    const ip = serverAddress.parse(address);
    const p = serverPort.parse(port);
    // 2.6 answers "IP changed from …", "no need to change the addr", ", port changed from …", each "by 'stats socket command'"
    const said = await this.change(
      `set server ${this.backend}/${server} addr ${ip} port ${p}`,
      /by 'stats socket command'/,
    );
    const now = await this.server(server);
    if (now.address !== ip || now.port !== p)
      throw this.refused(`${server} points at ${now.address}:${now.port}, not ${ip}:${p}`, said);
  }

  /**
   * HAProxy only: checks off (`disable health`, then `set server … health up`) or on (`enable health`)
   * for a slot that has a `check`. A slot its check marks DOWN is skipped at once (a request then gets
   * 503 at once), so the slot that holds requests must be unchecked, or have its check off while it
   * holds (docs/front-door.md). management.txt says a server with its check disabled is "considered
   * UP"; 2.6.12 keeps one its check had marked DOWN down until `health up` (test/front-door/hold.test.ts).
   */
  async setHealthChecks(name: string, enabled: boolean): Promise<void> {
    const server = frontDoorName.parse(name);
    if (enabled) {
      await this.change(`enable health ${this.backend}/${server}`, /^$/);
      return;
    }
    await this.change(`disable health ${this.backend}/${server}`, /^$/);
    await this.change(`set server ${this.backend}/${server} health up`, /^$/);
  }

  async sessions(name: string): Promise<number> {
    const server = frontDoorName.parse(name);
    const row = (await this.stats()).get(server);
    if (row === undefined) throw this.unknown(`no server ${server} in`);
    return row.scur;
  }

  /** `show stat <backend> 4 -1`: the backend's servers only, by name. */
  private async stats(): Promise<Map<string, { scur: number; qcur: number }>> {
    const rows = parseStatCsv(await this.ask(`show stat ${this.backend} 4 -1`));
    const out = new Map<string, { scur: number; qcur: number }>();
    for (const row of rows) {
      if (row.pxname !== this.backend || row.svname === "BACKEND" || row.svname === "FRONTEND") continue;
      const scur = Number(row.scur);
      const qcur = Number(row.qcur === "" ? "0" : row.qcur);
      if (!Number.isInteger(scur) || !Number.isInteger(qcur))
        throw badAnswer(`show stat gave scur ${JSON.stringify(row.scur)} for ${row.svname}`);
      out.set(row.svname!, { scur, qcur });
    }
    return out;
  }

  /** A read: HAProxy's refusals come back as text where the data would be. */
  private async ask(command: string): Promise<string> {
    const answer = await runtimeCommand(this.target, command);
    this.refusal(answer);
    return answer;
  }

  /** A change: its answer must match `ok` (after refusals are told apart), else it was refused. */
  private async change(command: string, ok: RegExp): Promise<string> {
    const answer = (await runtimeCommand(this.target, command)).trim();
    this.refusal(answer);
    if (!ok.test(answer)) throw this.refused(`HAProxy answered "${command}" with: ${answer}`, answer);
    return answer;
  }

  private refusal(answer: string): void {
    const first = answer.trim().split("\n")[0] ?? "";
    if (/^(Can't find backend|No such backend|No such proxy)\.?$/.test(first))
      throw this.unknown("no backend", first);
    if (/^No such server\.?$/.test(first)) throw this.unknown("a server named is not in", first);
    if (/^Permission denied/.test(first))
      throw new CodedError(
        "FRONT_DOOR_DENIED",
        `HAProxy's socket ${this.target.socket} on ${this.target.transport.hostName} is not at level admin: ${first}`,
        "give the stats socket `level admin` in HAProxy's global section (docs/front-door.md) and reload HAProxy",
      );
    if (/^Unknown command/.test(first))
      throw this.refused(`HAProxy does not know the command (${first})`, first);
  }

  private unknown(what: string, said = ""): CodedError {
    return new CodedError(
      "FRONT_DOOR_UNKNOWN_SERVER",
      `${what} HAProxy backend ${this.backend} on ${this.target.transport.hostName}${said === "" ? "" : ` (HAProxy: ${said})`}`,
      "the host's front door settings must name the backend and its servers exactly as HAProxy's configuration does (show servers state lists them)",
    );
  }

  private refused(what: string, said: string): CodedError {
    return new CodedError(
      "FRONT_DOOR_REFUSED",
      `HAProxy on ${this.target.transport.hostName} did not do it: ${what}${said === "" ? "" : ` (${said})`}`,
      "look at HAProxy's log on the host; modelswap needs HAProxy 2.6 or later and a socket at level admin",
    );
  }
}
