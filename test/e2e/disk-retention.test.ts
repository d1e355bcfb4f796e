import { mkdir, readdir, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTransport } from "../../src/host/create-transport.ts";
import { fenceDir, fencedTransport } from "../../src/host/fence.ts";
import { sh } from "../../src/host/shell-quote.ts";
import type { HostTransport } from "../../src/host/transport.ts";
import { createLogger } from "../../src/log.ts";
import { collectGarbage } from "../../src/retention/collect-garbage.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";

/**
 * Disk retention end to end (issue 30): a simulated GPU host over the real sshd, on a disk of a given size
 * (its `df` reports that size less what the sandbox holds, so a delete gives space back), with five old
 * models, an old unit file of modelswap's, a pinned model, a model another service's unit names, and a
 * symlink out of the models directory. `/llm gc --dry-run` lists and changes nothing; a swap ends by
 * deleting what retention lets go and keeps what serves and what its rollback needs; a gc whose fence
 * number is stale is refused by the host; `/llm gc` deletes and says what df measured; a plan short of
 * disk counts what retention frees, and the swap reclaims it after approval, before its download.
 */
const HOST = "gpu-1";
const FIRST = "sim-org/llama-first";
const SECOND = "sim-org/llama-second";
const MB = 1_000_000;
const DISK = 50_000 * MB;
let bench: Bench;
let swaps: SwapDriver;
let transport: HostTransport;
let modelsDir: string;
let orphanCache: string;
let unitDir: string;
let outside: string;
const old: string[] = [];
const log = createLogger({ level: "silent" });

const sha12 = (n: number) => n.toString(16).padStart(12, "0");

/** A model directory as an earlier swap left it: one weight file of `mb` MB, last touched `days` ago. */
async function oldModel(name: string, mb: number, days = 30): Promise<string> {
  const dir = join(modelsDir, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "model.safetensors"), Buffer.alloc(mb * MB, 7));
  const t = Date.now() / 1000 - days * 86_400;
  await utimes(dir, t, t);
  return dir;
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** df at the models directory, as the host reports it. */
async function freeBytes(): Promise<number> {
  const r = await transport.exec(sh`df -B1 --output=avail ${modelsDir} | tail -n 1`);
  return Number(r.stdout.trim());
}

async function command(user: string, text: string): Promise<string> {
  const ack = await bench.slack.command(user, text, { channel: CHANNEL });
  expect(ack.status).toBe(200);
  return ack.ackResponse?.text ?? "";
}

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 8 },
    hosts: [
      {
        name: HOST,
        serving: { preset: "qwen3-fp8-dense" },
        diskSizeBytes: DISK,
        config: { retention: { pinned: [`pinned-org--keep--${sha12(0xb)}`] } },
      },
    ],
  });
  bench.hub.addModel(makeModel("llama-bf16-small", { id: FIRST, gated: false }));
  bench.hub.addModel(makeModel("llama-bf16-small", { id: SECOND, gated: false }));
  const sim = bench.host(HOST).sim;
  modelsDir = sim.modelsDir;
  unitDir = sim.unitDir;
  for (let i = 1; i <= 5; i++) old.push(await oldModel(`old-org--model-${i}--${sha12(i)}`, 4));
  await oldModel(`pinned-org--keep--${sha12(0xb)}`, 1);
  // the compile caches of a unit long gone (issue #31: one directory per engine build, GPU, model, flags)
  orphanCache = await oldModel(`.modelswap/caches/sglang-${sha12(0xe)}-sm120-${sha12(0xe)}-0123abcd`, 1);
  const foreign = await oldModel(`other-org--embedder--${sha12(0xc)}`, 1);
  await writeFile(
    join(unitDir, "batch-embedder.service"),
    `[Unit]\nDescription=not modelswap's\n\n[Service]\nExecStart=/usr/bin/true --model ${foreign}\n`,
  );
  // an old unit of modelswap's, disabled and stopped, naming the first old model
  const oldUnit = join(unitDir, "sglang-old-org-model-1-0000001.service");
  await writeFile(
    oldUnit,
    `# Written by modelswap for swap sw-old; later swaps write units of their own.\n[Unit]\nDescription=old\n\n[Service]\nExecStart=/usr/bin/true --model-path ${old[0]}\n\n[Install]\nWantedBy=multi-user.target\n`,
  );
  // written at its switch, after its model's download
  const t = Date.now() / 1000 - 20 * 86_400;
  await utimes(oldUnit, t, t);
  // a symlink out of the models directory, to something that must survive
  outside = join(modelsDir, "..", "outside-the-root");
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, "precious.bin"), "keep me");
  await symlink(outside, join(modelsDir, `link-org--escape--${sha12(0xd)}`));
  await bench.startBot();
  transport = createTransport((await bench.config()).file.hosts[0]!, log);
  swaps = new SwapDriver(bench);
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  await transport?.close();
  await bench?.stop();
});

describe("disk retention on a simulated host", () => {
  it("refuses bad input with what is accepted, and a deleting gc from someone who may not swap", async () => {
    expect(await command(USERS.alice, "gc nosuchhost")).toMatch(
      /Unknown host `nosuchhost`\. Known hosts: gpu-1\..*Usage: `\/llm gc \[host\] \[--dry-run\]`/s,
    );
    expect(await command(USERS.alice, "gc gpu-1 --dyr-run")).toMatch(
      /Cannot run gc: unknown option `--dyr-run` \(did you mean `--dry-run`\?\): the one option is `--dry-run`/,
    );
    expect(await command(USERS.mallory, "gc gpu-1")).toMatch(/Only requesters may delete from hosts/);
    for (const dir of old) expect(await exists(dir)).toBe(true);
  });

  it("a dry run lists what would go (path, size, why) and what is kept, and changes nothing", async () => {
    const before = await freeBytes();
    expect(await command(USERS.carol, "gc gpu-1 --dry-run")).toMatch(/nothing will be deleted/);
    const answer = await until(
      () => bench.slack.ephemerals(CHANNEL, USERS.carol).find((e) => e.text.includes("Would delete")),
      { what: "the dry run's answer" },
    );
    // four old models (16 MB); the old unit of modelswap's is one of the last two that served, so its model stays
    expect(answer.text).toMatch(/Would delete 5 entries and free about 1\d\.\d MB/);
    const blocks = JSON.stringify(answer.blocks);
    for (const dir of old.slice(1))
      expect(blocks).toContain(`${dir}\` (model, 4.0 MB) — no unit file left names it`);
    expect(blocks).toContain(`${old[0]}\` (model, 4.0 MB) — named by sglang-old-org-model-1-0000001.service`);
    expect(blocks).toMatch(
      /sglang-old-org-model-1-0000001.service` \(unit file, [^)]*\) — one of the last 2 units that served/,
    );
    expect(blocks).toMatch(/pinned-org--keep--[0-9a-f]{12}` \(model, [^)]*\) — pinned/);
    expect(blocks).toMatch(
      /other-org--embedder--[0-9a-f]{12}` \(model, [^)]*\) — named by batch-embedder.service/,
    );
    expect(blocks).toMatch(/sglang-gpu-1.service` \(unit file, [^)]*\) — not written by modelswap/);
    for (const dir of old) expect(await exists(dir)).toBe(true);
    expect(await freeBytes()).toBe(before);
  });

  it("a host with 5 old models gets their space back after a swap, keeping what serves and what rollback needs", async () => {
    const card = await swaps.request(FIRST, HOST);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/, 90_000);
    const thread = await until(
      () => (swaps.threadText(card.ts).includes("🧹 Disk retention") ? swaps.threadText(card.ts) : undefined),
      { what: "the swap's disk retention in its thread" },
    );
    expect(thread).toMatch(
      /🧹 Disk retention: deleted 7 old entries \(freed 2\d\.\d MB, as df measures it\)/,
    );
    for (const dir of old) expect(await exists(dir)).toBe(false);
    expect(await exists(orphanCache)).toBe(false);
    // the new unit's compile caches are its own: named by it, kept
    const newCache = /^Environment=TRITON_CACHE_DIR=(\S+)\/triton$/m.exec(
      (await swaps.record(swaps.swapId(card.ts)))!.plan!.unitText,
    )?.[1];
    expect(newCache).toMatch(/\/\.modelswap\/caches\/sglang-[0-9a-f]{12}-sm120-[0-9a-f]{12}-[0-9a-f]{8}$/);
    expect(await exists(newCache!)).toBe(true);
    expect(await exists(join(unitDir, "sglang-old-org-model-1-0000001.service"))).toBe(false);
    // kept: the unit that served before and its files (a rollback's), the pinned model, another service's
    const served = (await readdir(modelsDir)).filter((n) => !n.startsWith("."));
    expect(served).toContain(`pinned-org--keep--${sha12(0xb)}`);
    expect(served).toContain(`other-org--embedder--${sha12(0xc)}`);
    expect(served.some((n) => n.startsWith("sim-org--llama-first--"))).toBe(true);
    expect(await exists(join(unitDir, "sglang-gpu-1.service"))).toBe(true);
    expect(await exists(join(outside, "precious.bin"))).toBe(true);
    const record = await swaps.record(swaps.swapId(card.ts));
    const rollbackModel = record!.plan!.host.currentUnit.execStart.find((w) => w.startsWith(modelsDir));
    expect(rollbackModel).toBeDefined();
    expect(await exists(rollbackModel!)).toBe(true);
    // and `/llm rollback` finds what it needs: its plan's checks pass (then it is rejected: nothing changes)
    const ack = await command(USERS.alice, "rollback gpu-1");
    const id = /\(swap `(sw-[a-z0-9-]+)`\)/.exec(ack)?.[1];
    expect(id, ack).toBeDefined();
    const rollback = await until(() => swaps.cardsOf(id!)[0], { what: "the rollback's card" });
    const plan = JSON.stringify((await swaps.plan(rollback.ts)).blocks);
    expect(plan).toMatch(/✓ \*\d+ checks pass\*: unit, model-files/);
    expect(plan).not.toContain("✗");
    await swaps.reject(rollback.ts);
    await swaps.outcome(rollback.ts, /Rejected/);
  }, 180_000);

  it("a gc whose fence number is older than the host's is refused on the host and deletes nothing", async () => {
    const extra = await oldModel(`old-org--model-6--${sha12(6)}`, 3);
    const config = (await bench.config()).file.hosts[0]!;
    const stale = fencedTransport(
      transport,
      { dir: fenceDir(modelsDir), token: { number: 0, catchUp: async () => false } },
      10_000,
    );
    const target = {
      modelsDir,
      unitDir,
      sudo: false,
      rules: { keep: 2, pinned: [], serving: [config.currentUnit] },
    };
    await expect(collectGarbage(transport, stale, target, false)).rejects.toMatchObject({
      code: "FENCE_STALE",
    });
    expect(await exists(extra)).toBe(true);

    // `/llm gc` takes a lease of its own, with a number the host has not seen: it deletes, and says what df measured
    const before = bench.slack.messages(CHANNEL).length;
    expect(await command(USERS.alice, "gc gpu-1")).toMatch(/Reclaiming disk on gpu-1/);
    const answer = await until(
      () =>
        bench.slack
          .messages(CHANNEL)
          .slice(before)
          .find((m) => m.text.includes("Deleted")),
      { what: "/llm gc's answer in the channel" },
    );
    expect(answer.text).toMatch(/Deleted 1 of 1 on gpu-1: freed [3-5]\.\d MB as df measures it/);
    expect(await exists(extra)).toBe(false);
  }, 60_000);

  it("a plan short of disk counts what retention frees, and the swap reclaims it after approval, before its download", async () => {
    for (let i = 7; i <= 9; i++) await oldModel(`old-org--model-${i}--${sha12(i)}`, 20);
    // the disk leaves 2 MB: the 7.4 MB model (and hf's margin) fits only with the 60 MB retention frees
    const free = await freeBytes();
    await bench.host(HOST).sim.setFault("diskSizeBytes", DISK - free + 2 * MB);
    expect(await freeBytes()).toBeLessThan(3 * MB);
    const card = await swaps.request(SECOND, HOST);
    const plan = await swaps.plan(card.ts);
    expect(JSON.stringify(plan.blocks)).toMatch(
      /short, but disk retention frees [6-9]\d\.\d MB .*once approved, the swap deletes them before its download starts/,
    );
    expect(await exists(join(modelsDir, `old-org--model-7--${sha12(7)}`))).toBe(true);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/, 90_000);
    const thread = swaps.threadText(card.ts);
    const reclaimed = thread.indexOf("🧹 Disk retention: deleted");
    expect(reclaimed).toBeGreaterThan(-1);
    expect(reclaimed).toBeLessThan(thread.indexOf("📦 Download complete"));
    for (let i = 7; i <= 9; i++)
      expect(await exists(join(modelsDir, `old-org--model-${i}--${sha12(i)}`))).toBe(false);
  }, 150_000);
});
