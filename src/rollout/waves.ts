import type { WavePolicy } from "../config/groups-schema.ts";

/**
 * A rollout's waves, in order: the canary (the policy's first `canary` hosts), then, for each percent of
 * `waves`, the hosts up to that share of the group (rounded up, at least one more than before). Hosts go
 * in the group's order, so an operator picks the canary by listing it first.
 */
export function planWaves(
  hosts: readonly string[],
  policy: Pick<WavePolicy, "canary" | "waves">,
): string[][] {
  const waves: string[][] = [];
  let done = Math.min(policy.canary, hosts.length);
  waves.push(hosts.slice(0, done));
  for (const percent of policy.waves) {
    if (done >= hosts.length) break;
    const upTo = Math.min(hosts.length, Math.max(done + 1, Math.ceil((hosts.length * percent) / 100)));
    waves.push(hosts.slice(done, upTo));
    done = upTo;
  }
  if (done < hosts.length) waves.push(hosts.slice(done));
  return waves.filter((w) => w.length > 0);
}

/**
 * The hosts of a wave in batches of at most `maxUnavailable`, in order: how the bench counts a rollout's
 * critical path (bench/rollout.ts). The rollout starts a wave's next host as soon as one of its switches
 * ends (jobs/rollout/advance-rollout.ts), never later than these batches would.
 */
export function batches(wave: readonly string[], maxUnavailable: number): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < wave.length; i += maxUnavailable) out.push(wave.slice(i, i + maxUnavailable));
  return out;
}
