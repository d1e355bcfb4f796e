import { isDeepStrictEqual } from "node:util";
import { CodedError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { createTransport, type HostConnection } from "./create-transport.ts";
import { KeptShell } from "./kept-shell.ts";
import type { HostTransport } from "./transport.ts";

/** The swap that holds a host now (its lock), or undefined; throws when that cannot be read. */
export type HolderOf = (host: string) => Promise<string | undefined>;

/**
 * A reloaded host's settings that wait for the swap running there: `next` undefined is a removal. `swap`
 * undefined: the host's lock could not be read when the reload came.
 */
interface Pending<H> {
  swap: string | undefined;
  next: H | undefined;
}

/** A host whose new settings (or removal) apply only once the swap that holds it has ended. */
export interface DeferredHost {
  host: string;
  swap: string | undefined;
}

/** How long a replaced transport lives on, past its commands' own limit, for the commands still running on it. */
const RETIRE_MARGIN_MS = 5000;

/**
 * The configured hosts and one transport each, opened on first use and reused after. A reload replaces
 * the hosts (`update`): a new host is there at once; a changed or removed one too, unless a swap holds
 * it: then it keeps the settings its swap started with until that swap has ended (`settle`), so no swap
 * ever runs a step with another host's directories, ports or address than its earlier steps had.
 */
export class HostRegistry<H extends HostConnection> {
  private readonly transports = new Map<string, HostTransport>();
  private readonly shells = new Map<string, KeptShell>();
  private byName: Map<string, H>;
  private readonly pending = new Map<string, Pending<H>>();
  private readonly retired = new Set<{ close(): Promise<void> }>();
  private settled: (applied: DeferredHost[]) => void = () => undefined;

  constructor(
    hosts: readonly H[],
    private readonly log: Logger,
  ) {
    this.byName = new Map(hosts.map((h) => [h.name, h]));
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  /** The host's settings, or undefined when no host of that name is configured. */
  find(name: string): H | undefined {
    return this.byName.get(name);
  }

  config(name: string): H {
    const host = this.byName.get(name);
    if (host === undefined) {
      throw new CodedError(
        "HOST_UNKNOWN",
        `no host named ${name} is configured`,
        `use one of: ${this.names().join(", ")}, or add it under hosts: in the config (a running bot reads the file again when it changes)`,
      );
    }
    return host;
  }

  transport(name: string): HostTransport {
    const host = this.config(name);
    let transport = this.transports.get(name);
    if (transport === undefined) {
      transport = createTransport(host, this.log, this.names().indexOf(name));
      this.transports.set(name, transport);
    }
    return transport;
  }

  /** The host's kept shell (kept-shell.ts) on its transport: for the health monitor's frequent checks. */
  keptShell(name: string): KeptShell {
    let shell = this.shells.get(name);
    if (shell === undefined) {
      shell = new KeptShell(this.transport(name), this.config(name).commandTimeoutSeconds * 1000);
      this.shells.set(name, shell);
    }
    return shell;
  }

  /**
   * Takes the hosts of a reloaded config, in its order. A host that is new is there at once; a changed or
   * removed host too, unless `holderOf` says a swap holds it (or cannot say): then it keeps its settings
   * until `settle` finds that swap gone. Says which hosts wait so.
   */
  async update(hosts: readonly H[], holderOf: HolderOf): Promise<DeferredHost[]> {
    const next = new Map(hosts.map((h) => [h.name, h]));
    const deferred: DeferredHost[] = [];
    const kept = new Map<string, H>();
    for (const name of new Set([...this.byName.keys(), ...next.keys()])) {
      const now = this.byName.get(name);
      const wanted = next.get(name);
      this.pending.delete(name);
      if (now === undefined || isDeepStrictEqual(now, wanted)) continue;
      const swap = await holderOf(name).then(
        (holder) => ({ known: true, holder }),
        () => ({ known: false, holder: undefined }),
      );
      if (swap.known && swap.holder === undefined) {
        this.retire(name, now);
        continue;
      }
      this.pending.set(name, { swap: swap.holder, next: wanted });
      kept.set(name, now);
      deferred.push({ host: name, swap: swap.holder });
    }
    // the new file's order (names() and each host's index in messages follow it), then the hosts kept for their swap
    const order = new Map<string, H>();
    for (const [name, host] of next) order.set(name, kept.get(name) ?? host);
    for (const [name, host] of kept) if (!order.has(name)) order.set(name, host);
    this.byName = order;
    return deferred;
  }

  /** The hosts whose new settings wait for a swap. */
  waiting(): DeferredHost[] {
    return [...this.pending].map(([host, p]) => ({ host, swap: p.swap }));
  }

  /** Called with the hosts whose waiting settings `settle` has just put in place. */
  onSettled(listener: (applied: DeferredHost[]) => void): void {
    this.settled = listener;
  }

  /**
   * Puts in place the waiting settings of each host (or of `only`) whose swap has ended: its lock is free
   * or held by another swap (a host runs one swap at a time). A swap's run asks this before it reads the
   * host, so the next swap there starts with the new settings in every process alike.
   */
  async settle(holderOf: HolderOf, only?: string): Promise<DeferredHost[]> {
    const applied: DeferredHost[] = [];
    for (const [name, waiting] of [...this.pending]) {
      if (only !== undefined && name !== only) continue;
      let holder: string | undefined;
      try {
        holder = await holderOf(name);
      } catch {
        continue;
      }
      if (this.pending.get(name) !== waiting) continue;
      if (waiting.swap === undefined && holder !== undefined) {
        // the lock could not be read at the reload: the swap holding the host now is the one to wait for
        waiting.swap = holder;
        continue;
      }
      if (holder !== undefined && holder === waiting.swap) continue;
      this.pending.delete(name);
      const now = this.byName.get(name);
      if (now !== undefined) this.retire(name, now);
      if (waiting.next === undefined) this.byName.delete(name);
      else this.byName.set(name, waiting.next);
      applied.push({ host: name, swap: waiting.swap });
    }
    if (applied.length > 0) this.settled(applied);
    return applied;
  }

  async closeAll(): Promise<void> {
    const shells = [...this.shells.values()];
    this.shells.clear();
    await Promise.allSettled(shells.map((s) => s.close()));
    const all = [...this.transports.values(), ...this.retired];
    this.transports.clear();
    this.retired.clear();
    await Promise.allSettled(all.map((t) => t.close()));
  }

  /**
   * Drops the host's shell and transport (the next use opens them with the new settings). Commands still
   * running on them get their own time limit to end before they are closed.
   */
  private retire(name: string, host: H): void {
    const old = [this.shells.get(name), this.transports.get(name)].filter((t) => t !== undefined);
    this.shells.delete(name);
    this.transports.delete(name);
    for (const t of old) {
      this.retired.add(t);
      setTimeout(
        () => {
          this.retired.delete(t);
          void t.close().catch(() => undefined);
        },
        host.commandTimeoutSeconds * 1000 + RETIRE_MARGIN_MS,
      ).unref();
    }
  }
}
