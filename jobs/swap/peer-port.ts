import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { HostConfig } from "../../src/config/file-schema.ts";
import { describeError } from "../../src/errors.ts";
import type { HostRegistry } from "../../src/host/host-registry.ts";
import { keyText, type PeerSource } from "../../src/host/peer-copy.ts";
import type { Logger } from "../../src/log.ts";
import type { SwapQueue } from "../../src/queue/swap-queue.ts";
import type { RolloutRecord } from "../../src/rollout/rollout-record.ts";
import type { Store } from "../../src/store/store.ts";
import type { PeerChoice, PeerPort } from "../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";

interface PeerDeps {
  store: Store;
  hosts: HostRegistry<HostConfig>;
  swapJobs: Pick<SwapQueue, "wake">;
  log: Logger;
}

/**
 * The peers of a rollout's host swap, over the store's copy state (src/store/peer-copies.ts) and the host
 * registry (addresses, pinned keys). The rollout's record is read at each call: its hosts and policy.
 */
export function peerPort(record: SwapRecord, deps: PeerDeps): PeerPort | undefined {
  const rolloutId = record.rollout?.id;
  if (rolloutId === undefined) return undefined;
  const me = record.host;
  const peers = deps.store.peers;
  const rollout = async (): Promise<RolloutRecord | undefined> => await deps.store.rollouts.get(rolloutId);

  return {
    rolloutId,
    key: () => peers.copyKey(rolloutId),

    async choose(): Promise<PeerChoice> {
      const r = await rollout();
      if (r === undefined) return { kind: "hub", why: "its rollout's record is gone" };
      const fanout = r.policy.copyFanout;
      if (fanout === 0) return { kind: "hub", why: "peer copies are off for this rollout (copyFanout 0)" };
      const seed = r.hosts[0]!;
      if (seed.host === me)
        return { kind: "hub", why: "the rollout's first host: its copy is the others' source" };
      const source = await peers.claim(rolloutId, me, fanout);
      if (source !== undefined) return { kind: "peer", source };
      const serving = await peers.sources(rolloutId);
      if (serving.length > 0)
        return {
          kind: "wait",
          why: `waiting for a copy slot: ${serving.map((s) => s.host).join(", ")} serve${serving.length === 1 ? "s" : ""} ${fanout} cop${fanout === 1 ? "y" : "ies"} at once`,
        };
      const unable = (await peers.unable(rolloutId))[seed.host];
      if (unable !== undefined) return { kind: "hub", why: `${seed.host} cannot serve its files: ${unable}` };
      const seedSwap = await deps.store.swaps.get(seed.swapId);
      const download = seedSwap?.stages.download.state;
      if (seedSwap === undefined || seedSwap.outcome !== undefined || download === "failed")
        return {
          kind: "hub",
          why: `${seed.host}, whose files the others copy, ${seedSwap?.outcome === undefined ? "has none" : `ended (${seedSwap.outcome})`}`,
        };
      return {
        kind: "wait",
        why: `${seed.host} fetches the files from the Hub; this host copies them from it`,
      };
    },

    release: () => peers.release(rolloutId, me),

    async servingAs(modelDir: string) {
      const r = await rollout();
      if (r === undefined) return { why: "its rollout's record is gone" };
      if (r.policy.copyFanout === 0) return { why: "peer copies are off for this rollout (copyFanout 0)" };
      const ssh = deps.hosts.config(me).ssh;
      if (ssh === undefined) return { why: `${me} is reached without SSH: peers have no address for it` };
      const raw = deps.hosts.transport(me).hostKey?.();
      if (raw === undefined) return { why: `the bot has not seen ${me}'s host key yet` };
      const from: string[] = [];
      for (const h of r.hosts) {
        if (h.host === me) continue;
        const address = deps.hosts.find(h.host)?.ssh?.address;
        if (address === undefined) continue;
        from.push(...(await addressesOf(address, deps.log)));
      }
      if (from.length === 0)
        return { why: "none of the rollout's other hosts has an address this host could admit" };
      const source: PeerSource = {
        host: me,
        address: ssh.address,
        port: ssh.port,
        user: ssh.user,
        modelDir,
        hostKey: keyText(raw),
      };
      return { source, from: [...new Set(from)] };
    },

    async serve(source: PeerSource) {
      await peers.serve(rolloutId, source);
      // the hosts waiting for a copy slot look again now, not at their next poll
      const r = await rollout();
      for (const h of r?.hosts ?? []) if (h.host !== me) await deps.swapJobs.wake(h.swapId);
    },

    cannotServe: (why: string) => peers.cannotServe(rolloutId, me, why),
    unserve: () => peers.unserve(rolloutId, me),
  };
}

/**
 * The addresses a host's connections come from, as sshd's from= matches them: an IP as it is, a name
 * resolved here (sshd matches from= against the client's address unless UseDNS is on, which it is not by
 * default).
 */
async function addressesOf(address: string, log: Logger): Promise<string[]> {
  if (isIP(address) !== 0) return [address];
  try {
    return (await lookup(address, { all: true })).map((a) => a.address);
  } catch (error) {
    log.warn({ address, err: describeError(error) }, "a rollout host's address did not resolve");
    return [];
  }
}
