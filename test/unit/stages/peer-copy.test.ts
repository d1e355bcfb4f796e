import { describe, expect, it } from "vitest";
import { downloadStep } from "../../../jobs/swap/stages/download.ts";
import { taskDir } from "../../../jobs/swap/stages/download-task.ts";
import { leavePeers } from "../../../jobs/swap/stages/peer-copy.ts";
import type { PeerSource } from "../../../src/host/peer-copy.ts";
import type { PeerChoice, PeerPort, StageContext } from "../../../src/swap/stage-context.ts";
import type { Fake } from "./fake-stage-context.ts";
import { countingStarts, eventsOf, plannedSwap } from "./stage-fixtures.ts";

/**
 * A rollout's host and its peers (jobs/swap/stages/peer-copy.ts, through the download step): it copies
 * from a peer that holds the files instead of the Hub, waits for one, falls back to the Hub when the copy
 * fails (saying so), and, once its own files are verified, serves them to its peers until its swap ends.
 */
const ROLLOUT = "ro-mxdq16y0-0b89cc";
const SOURCE: PeerSource = {
  host: "gpu-1",
  address: "10.0.0.1",
  port: 22,
  user: "modelswap",
  modelDir: "/srv/models/nvidia--Qwen3.5-397B-A17B-NVFP4--43da92d0ab12",
  hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO26yh94ePOQXZVXkoIXr1femYg8oj6HLirki+os2zz/",
};
const PRIVATE =
  "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";

/** A PeerPort answering `choices` in turn (the last one again after), and what it was told. */
function fakePeers(...choices: PeerChoice[]) {
  const told = { released: 0, served: [] as PeerSource[], unable: [] as string[], unserved: 0 };
  let i = 0;
  const port: PeerPort = {
    rolloutId: ROLLOUT,
    key: async () => ({
      publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE1cVr1Vxz8s2ZQd",
      privateKey: PRIVATE,
    }),
    choose: async () => choices[Math.min(i++, choices.length - 1)]!,
    release: async () => {
      told.released++;
    },
    servingAs: async (modelDir) => ({
      source: { ...SOURCE, host: "gpu-2", modelDir },
      from: ["10.0.0.1", "10.0.0.3"],
    }),
    serve: async (source) => {
      told.served.push(source);
    },
    cannotServe: async (why) => {
      told.unable.push(why);
    },
    unserve: async () => {
      told.unserved++;
    },
  };
  return { port, told };
}

async function rolloutHost(...choices: PeerChoice[]) {
  const fake = await plannedSwap();
  const peers = fakePeers(...choices);
  const counted = countingStarts(fake);
  const ctx: StageContext = { ...counted.ctx, peers: peers.port };
  return {
    fake,
    ctx,
    starts: counted.starts,
    ...peers,
    dir: taskDir("/srv/models", fake.swap.record.id, "download"),
  };
}

const exited = (fake: Fake, dir: string, exitCode: number, logTail: string[]) =>
  fake.host.status.set(dir, { state: "exited", exitCode, logTail });

describe("a rollout's host and its peers", () => {
  it("copies from a peer that holds the files, not from the Hub: the key passed aside, never in the script", async () => {
    const { fake, ctx, starts, dir } = await rolloutHost({ kind: "peer", source: SOURCE });
    const checkpoints = fake.checkpoints();
    await downloadStep(ctx);

    expect(starts).toHaveLength(1);
    expect(starts[0]!.script).toContain(
      `rsync -t --files-from=${dir}/files -e ${dir}/peer-ssh modelswap@10.0.0.1: `,
    );
    expect(starts[0]!.script).toContain("UserKnownHostsFile");
    expect(starts[0]!.script).not.toContain("hf download");
    expect(fake.host.started.get(dir)?.secrets).toEqual({ MODELSWAP_PEER_KEY: PRIVATE });
    expect(starts[0]!.script).not.toContain("OPENSSH PRIVATE KEY");
    expect(JSON.stringify(fake.host.commands)).not.toContain("OPENSSH PRIVATE KEY");
    expect(fake.swap.record.peerCopy).toMatchObject({ state: "copying", from: "gpu-1" });
    expect(fake.swap.record.tasks.download?.dir).toBe(dir);
    expect(fake.swap.record.stages.download).toMatchObject({
      state: "running",
      detail: "copying from gpu-1: 0 % of 223 GB",
    });
    // the claim recorded before its task starts, and the task after
    expect(fake.checkpoints()).toBe(checkpoints + 2);
  });

  it("waits while no peer has the files or a free slot: nothing started, the card says for what", async () => {
    const { fake, ctx, starts } = await rolloutHost({
      kind: "wait",
      why: "gpu-1 fetches the files from the Hub; this host copies them from it",
    });
    await downloadStep(ctx);
    await downloadStep(ctx);
    expect(starts).toEqual([]);
    expect(fake.swap.record.tasks.download).toBeUndefined();
    expect(fake.swap.record.stages.download).toMatchObject({
      state: "pending",
      detail: "gpu-1 fetches the files from the Hub; this host copies them from it",
    });
  });

  it("fetches from the Hub when a copy fails, and the thread says why; the peer's slot is let go", async () => {
    const { fake, ctx, starts, told, dir } = await rolloutHost({ kind: "peer", source: SOURCE });
    await downloadStep(ctx);
    const log = [
      "modelswap: copying 17 files",
      "Host key verification failed.",
      "rsync error: unexplained error (code 255)",
    ];
    exited(fake, dir, 255, log);

    await downloadStep(ctx);

    expect(told.released).toBe(1);
    expect(starts).toHaveLength(2);
    expect(starts[1]!.script).toContain("hf download nvidia/Qwen3.5-397B-A17B-NVFP4");
    expect(fake.swap.record.peerCopy).toMatchObject({
      state: "hub",
      from: "gpu-1",
      why: "the copy from gpu-1 failed: rsync error: unexplained error (code 255)",
    });
    expect(eventsOf(fake, "peer-copy-failed")).toEqual([expect.objectContaining({ from: "gpu-1", log })]);
    expect(fake.swap.record.tasks.download?.attempts).toBe(1);
    expect(fake.swap.record.stages.download).toMatchObject({ state: "running", detail: "starting" });
    // a failed Hub download after it is retried as a download, never as a copy again
    exited(fake, dir, 1, ["hf: connection reset"]);
    await downloadStep(ctx);
    expect(starts[2]!.script).toContain("hf download");
  });

  it("ends a copy that checks out done, says where from, and serves the files to its peers in turn", async () => {
    const { fake, ctx, told, dir } = await rolloutHost({ kind: "peer", source: SOURCE });
    await downloadStep(ctx);
    fake.host.on(/^command -v rrsync/, { stdout: "/usr/bin/rrsync\n" });
    exited(fake, dir, 0, ["modelswap: verified 17 files"]);

    await downloadStep(ctx);

    expect(told.released).toBe(1);
    expect(fake.swap.record.peerCopy?.state).toBe("copied");
    expect(fake.swap.record.stages.download).toMatchObject({ state: "done" });
    expect(fake.swap.record.stages.download.detail).toMatch(/copied from gpu-1 and verified in/);
    expect(eventsOf(fake, "downloaded")).toEqual([expect.objectContaining({ from: "gpu-1" })]);
    const line = fake.host.ran(/authorized_keys/).at(-1)!;
    expect(line).toContain(
      `restrict,from="10.0.0.1,10.0.0.3",expiry-time="202612021400Z",command="rrsync -ro ${fake.swap.record.plan!.modelDir}" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE1cVr1Vxz8s2ZQd modelswap-peer-copy:${ROLLOUT}:${ctx.host.name}`,
    );
    expect(told.served).toHaveLength(1);
    expect(fake.swap.record.peerServing?.since).toBeDefined();
    // once: a later look serves nothing again
    await downloadStep(ctx);
    expect(told.served).toHaveLength(1);

    // at its swap's end, no new copy from it: the line is removed, the store told
    await leavePeers(ctx);
    expect(told.unserved).toBe(1);
    expect(fake.host.ran(/authorized_keys/).at(-1)).toContain(
      `grep -vF -- modelswap-peer-copy:${ROLLOUT}:${ctx.host.name}`,
    );
  });

  it("lets its peer's slot go when its swap ends mid-copy, and leaves no key behind", async () => {
    const { ctx, told, fake } = await rolloutHost({ kind: "peer", source: SOURCE });
    await downloadStep(ctx);
    expect(fake.swap.record.peerCopy?.state).toBe("copying");
    await leavePeers(ctx);
    expect(told.released).toBe(1);
    expect(told.unserved).toBe(0); // it served nothing
    // its task was stopped outright with the swap's others: its trap never ran, the key is removed here
    expect(fake.host.ran(/peer_key/).at(-1)).toContain(
      `rm -f -- ${fake.swap.record.tasks.download!.dir}/peer_key`,
    );
  });

  it("starting a lost copy again, takes another peer, or the Hub when none serves any more", async () => {
    const other = { ...SOURCE, host: "gpu-3" };
    const { fake, ctx, starts, dir, told } = await rolloutHost(
      { kind: "peer", source: SOURCE },
      { kind: "peer", source: other },
      { kind: "wait", why: "gpu-3 serves 2 copies at once" },
    );
    await downloadStep(ctx);
    // its task's directory cleaned away on the host: started again, from the peer that has a slot now
    fake.host.status.set(dir, { state: "missing", exitCode: undefined, logTail: [] });
    await downloadStep(ctx);
    expect(starts.at(-1)!.script).toContain("modelswap@10.0.0.1:");
    expect(fake.swap.record.peerCopy).toMatchObject({ state: "copying", from: "gpu-3" });
    // and again, when no peer has a slot: the Hub, the record says why
    fake.host.status.set(dir, { state: "missing", exitCode: undefined, logTail: [] });
    await downloadStep(ctx);
    expect(starts.at(-1)!.script).toContain("hf download");
    expect(told.released).toBe(1);
    expect(fake.swap.record.peerCopy).toMatchObject({
      state: "hub",
      why: "gpu-3 serves its files no more: gpu-3 serves 2 copies at once",
    });
  });

  it("does not serve from a host without rrsync, and says why to its peers", async () => {
    const { fake, ctx, told, dir } = await rolloutHost({ kind: "peer", source: SOURCE });
    await downloadStep(ctx);
    fake.host.on(/^command -v rrsync/, { code: 1 });
    exited(fake, dir, 0, ["modelswap: verified 17 files"]);
    await downloadStep(ctx);
    expect(told.served).toEqual([]);
    expect(told.unable).toEqual([expect.stringContaining("rrsync is not installed")]);
    expect(fake.host.ran(/authorized_keys/)).toEqual([]);
    await leavePeers(ctx);
    expect(told.unserved).toBe(0);
  });
});
