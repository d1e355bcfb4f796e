import type { HostConfig } from "../config/file-schema.ts";
import type { EngineKind } from "../engine/engine-kind.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { AuditEntry } from "../store/audit-log.ts";
import type { ServingState } from "../store/host-state.ts";
import type { Store } from "../store/store.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { servingPortOf } from "../swap/unit-ports.ts";
import { type HostSwaps, readHostSwaps } from "./host-swaps.ts";
import { type MonitorView, monitorView } from "./monitor-view.ts";

/** One host as the fleet page shows it: read from the store, never probed. */
export interface FleetHost {
  name: string;
  /** The health monitor's last check (the alert's incident included). */
  health: MonitorView;
  /** The engine of the serving unit (the swap that installed it, else the host's `engine`). */
  engine: EngineKind;
  unit: string;
  port: number;
  /** What the serving unit serves, as the swap that installed it recorded; undefined before the first swap. */
  serving?: ServingState;
  /** The HAProxy front door in the config, with the slot the serving unit sits behind. */
  frontDoor?: { backend: string; live: string | undefined; slots: string[]; hold: string };
  swaps: Omit<HostSwaps, "lock">;
}

export interface FleetView {
  at: Date;
  /** In the config's order. */
  hosts: FleetHost[];
  /** The swaps holding a host now (stuck ones are on their host's row), oldest first. */
  inFlight: SwapRecord[];
  /** The ledger, newest first. */
  history: SwapRecord[];
  /** Records of the ledger that do not parse (named in the log). */
  unreadable: number;
  /** The audit stream, newest first. */
  audit: AuditEntry[];
}

export interface FleetViewDeps {
  store: Pick<Store, "locks" | "swaps" | "audit" | "hosts" | "incidents">;
  /** The BullMQ state of a swap's job: tells a live swap from a stuck lock (as `/llm status` does). */
  jobState(swapId: string): Promise<string | undefined>;
  log: Logger;
}

export interface FleetViewQuery {
  hosts: readonly HostConfig[];
  /** How old a monitor check may be and still stand for the host (monitorFreshMs). */
  freshMs: number;
  historyLimit: number;
  auditLimit: number;
  now?: number;
}

/**
 * The fleet as the store has it: each host's health as the monitor last saw it, what serves there and on
 * which engine and front-door slot, the swap running there (or a stuck lock) and its last one; the swaps
 * in flight, the ledger and the audit stream. The same readers `/llm status` and `/llm history` use; no
 * host is contacted, so it answers in milliseconds for a fleet and needs no SSH key.
 */
export async function readFleetView(query: FleetViewQuery, deps: FleetViewDeps): Promise<FleetView> {
  const now = query.now ?? Date.now();
  const { store, log } = deps;
  const hosts = await Promise.all(query.hosts.map((host) => readHost(host, query.freshMs, now, deps)));
  const [ledger, audit] = await Promise.all([
    store.swaps.history({ limit: query.historyLimit }),
    store.audit.read({ limit: query.auditLimit }),
  ]);
  if (ledger.unreadable.length > 0)
    log.error(
      { unreadable: ledger.unreadable },
      "swap records in the ledger do not parse: left off the page",
    );
  const inFlight = hosts
    .flatMap((h) => (h.swaps.active === undefined ? [] : [h.swaps.active]))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  return {
    at: new Date(now),
    hosts,
    inFlight,
    history: ledger.records,
    unreadable: ledger.unreadable.length,
    audit,
  };
}

async function readHost(
  host: HostConfig,
  freshMs: number,
  now: number,
  deps: FleetViewDeps,
): Promise<FleetHost> {
  const { store, log } = deps;
  const [serving, health, swaps] = await Promise.all([
    store.hosts.serving(host.name).catch((error: unknown) => {
      log.warn({ host: host.name, err: describeError(error) }, "could not read what the host serves");
      return undefined;
    }),
    store.incidents.state(host.name),
    readHostSwaps(host.name, { ...deps, store }),
  ]);
  const port = servingPortOf(serving, host.servingPort);
  const fd = host.frontDoor;
  const slots = fd === undefined ? [] : [{ server: fd.server, port: host.servingPort }];
  if (fd?.standby !== undefined) slots.push({ server: fd.standby.server, port: fd.standby.port });
  const { lock: _, ...ownSwaps } = swaps;
  return {
    name: host.name,
    health: monitorView(health, now, freshMs),
    engine: serving?.engine ?? host.engine,
    unit: serving?.unit ?? host.currentUnit,
    port,
    ...(serving === undefined ? {} : { serving }),
    ...(fd === undefined
      ? {}
      : {
          frontDoor: {
            backend: fd.backend,
            live: slots.find((s) => s.port === port)?.server,
            slots: slots.map((s) => s.server),
            hold: fd.hold,
          },
        }),
    swaps: ownSwaps,
  };
}
