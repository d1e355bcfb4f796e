import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Bench, type BenchHostSpec, startBench } from "./bench.ts";

/**
 * A 60-host fleet for the fleet page (test/e2e/fleet-page.test.ts and scripts/fleet-screenshot.ts): one
 * sandbox that serves shared by 48 light hosts, one that serves nothing shared by 10 (every sixth host:
 * the monitor finds them down), and `gpu-07`, a full host behind a real HAProxy where swaps run. Two
 * operators sign in to the page: `olivia` may read, `rita` may only request.
 */
export const FLEET_SIZE = 60;
export const SWAP_HOST = "gpu-07";
export const SERVING_HOST = "gpu-01";
export const DOWN_HOST = "gpu-06";

export const hostName = (i: number) => `gpu-${String(i).padStart(2, "0")}`;
/** The hosts whose sandbox serves nothing: every sixth. */
export const DOWN_HOSTS = Array.from({ length: FLEET_SIZE / 6 }, (_, i) => hostName(6 * (i + 1)));

/** Quick loads: a swap of the bench's small model takes seconds. */
const FAST = { loadSeconds: 0.3, warmupMs: 50 };

export interface FleetBench {
  bench: Bench;
  /** The bot's HTTP port, where the ops routes and the page are: `${base}/fleet`. */
  base: string;
  /** Operator tokens: `reader` has the read scope, `requester` only request. */
  tokens: { reader: string; requester: string };
}

export async function startFleetBench(
  options: { healthSeconds?: number; logTo?: "file" | "silent" } = {},
): Promise<FleetBench> {
  const hosts: BenchHostSpec[] = [];
  for (let i = 1; i <= FLEET_SIZE; i += 1) {
    const name = hostName(i);
    if (name === SERVING_HOST)
      hosts.push({
        name,
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: FAST },
      });
    else if (name === DOWN_HOST) hosts.push({ name, gpus: "h200-1gpu", serving: false });
    else if (name === SWAP_HOST)
      hosts.push({
        name,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: FAST },
        frontDoor: { holdSeconds: 60, drainSeconds: 5 },
        waitHealthy: true,
      });
    else hosts.push({ name, sandboxOf: DOWN_HOSTS.includes(name) ? DOWN_HOST : SERVING_HOST });
  }
  // the monitor checks each host every 10 s and alerts on the second failure: the down hosts are
  // down (an open incident) within a few intervals; 60 handshakes on two loaded cores want 10 s
  const bench = await startBench({
    hosts,
    connectTimeoutSeconds: 10,
    swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1, healthTimeoutSeconds: 30 },
    health: { intervalSeconds: options.healthSeconds ?? 10, failureThreshold: 2, recoveryThreshold: 2 },
    ...(options.logTo === undefined ? {} : { logTo: options.logTo }),
  });
  bench.slack.setRateLimits({ scale: 100 });
  const tokens = { reader: randomBytes(24).toString("hex"), requester: randomBytes(24).toString("hex") };
  const files = { reader: join(bench.dir, "token-olivia"), requester: join(bench.dir, "token-rita") };
  await writeFile(files.reader, `${tokens.reader}\n`, { mode: 0o600 });
  await writeFile(files.requester, `${tokens.requester}\n`, { mode: 0o600 });
  await bench.editConfig((config) => {
    config.operators = [
      { name: "olivia", tokenFile: files.reader, scopes: ["read"] },
      { name: "rita", tokenFile: files.requester, scopes: ["request"] },
    ];
  });
  await bench.startBot();
  return { bench, base: `http://127.0.0.1:${bench.env.PORT}`, tokens };
}
