import { HaproxyFrontDoor } from "../src/front-door/haproxy-front-door.ts";
import { LocalTransport } from "../src/host/local-transport.ts";
import type { Bench } from "./bench.ts";

/** A bench host's HAProxy through our own adapter, run locally (the test's view, not the bot's). */
export function benchFrontDoor(bench: Bench, host: string): HaproxyFrontDoor {
  const haproxy = bench.host(host).frontDoor;
  if (haproxy === undefined) throw new Error(`the bench's host ${host} has no front door`);
  const local = new LocalTransport({ hostName: host, commandTimeoutMs: 10_000 });
  return new HaproxyFrontDoor(local, { socket: haproxy.socket, backend: haproxy.backend });
}

/** Each slot's administrative state now, e.g. `{ blue: "ready", hold: "maint" }`. */
export async function slotStates(bench: Bench, host: string): Promise<Record<string, string>> {
  const servers = await benchFrontDoor(bench, host).servers();
  return Object.fromEntries(servers.map((s) => [s.name, s.state]));
}

/**
 * The slots' states, looked at every 30 ms until stopped, each change kept once: for "the front door
 * never pointed at nothing" (some slot ready at every look).
 */
export function watchSlots(bench: Bench, host: string): { stop(): Promise<Record<string, string>[]> } {
  const seen: Record<string, string>[] = [];
  let watching = true;
  const looking = (async () => {
    let last = "";
    while (watching) {
      // the bench may be stopping under a failed test: a look that cannot be made ends the watch
      const states = await slotStates(bench, host).catch(() => undefined);
      if (states === undefined) break;
      if (JSON.stringify(states) !== last) seen.push(states);
      last = JSON.stringify(states);
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  })();
  return {
    async stop() {
      watching = false;
      await looking;
      return seen;
    },
  };
}

/** The looks at which no slot was ready (none, when the front door always pointed somewhere). */
export function withoutReadySlot(seen: readonly Record<string, string>[]): Record<string, string>[] {
  return seen.filter((states) => !Object.values(states).includes("ready"));
}
