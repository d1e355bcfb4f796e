import { hostname } from "node:os";
import { beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, type ChildBot, USERS } from "../../testbench/bench.ts";
import { addSimModel, logLines, type SwapDriver, waitForLog } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Config reload without the file watch (MODELSWAP_WATCH_CONFIG=false, as on a file system whose changes
 * the watch cannot see): two real processes — `modelswap start` and `modelswap worker` — sharing one
 * config file. An edit changes nothing by itself; SIGHUP makes one process read the file (and it lives
 * on: SIGHUP used to end it); the other, which saw nothing, converges on the note the first one sends
 * over Redis.
 */
let bench: Bench;
let swaps: SwapDriver;
let start: ChildBot;
let worker: ChildBot;
const noWatch = { MODELSWAP_WATCH_CONFIG: "false" };

useSwapBench(
  { hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }] },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(async () => {
  [start, worker] = await Promise.all([
    bench.spawnBot({ role: "start", env: noWatch }),
    bench.spawnBot({ role: "worker", env: noWatch }),
  ]);
  for (const child of [start, worker])
    await waitForLog(child.logPath, /modelswap started/, { what: "the process to be up", timeoutMs: 60_000 });
}, 120_000);

const processOf = (child: ChildBot, role: string) => `${role}@${hostname()}:${child.pid}`;

async function codes(
  child: ChildBot,
): Promise<{ code: string; trigger?: string; sha256?: string; msg: string }[]> {
  return (await logLines(child.logPath))
    .filter((line) => line.includes('"code":"CONFIG_'))
    .map((line) => JSON.parse(line) as { code: string; trigger?: string; sha256?: string; msg: string });
}

describe("config reload by SIGHUP, and by another process's note", () => {
  it("with the watch off, an edit changes nothing by itself", async () => {
    await bench.editConfig((config) => {
      config.approvers.users.push(USERS.erin);
    });
    // the point is that nothing happens: the watch would have read the file within 0.3 s
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await codes(start)).toEqual([]);
    expect(await codes(worker)).toEqual([]);
  });

  it("SIGHUP: that process reads the file and lives on; the other converges on its note", async () => {
    process.kill(start.pid, "SIGHUP");
    await waitForLog(start.logPath, /"code":"CONFIG_RELOADED"/, { what: "the SIGHUP'd process's reload" });
    await waitForLog(worker.logPath, /"code":"CONFIG_RELOADED"/, { what: "the other process's reload" });
    const [signalled] = await codes(start);
    const [noted] = await codes(worker);
    expect(signalled).toMatchObject({ code: "CONFIG_RELOADED", trigger: "signal" });
    expect(signalled?.msg).toBe(`config reloaded (SIGHUP): approvers added: ${USERS.erin}`);
    expect(noted).toMatchObject({ code: "CONFIG_RELOADED", trigger: "note", sha256: signalled?.sha256 });
    expect(noted?.msg).toBe(
      `config reloaded (${processOf(start, "bot+worker")} loaded a file this process had not read): approvers added: ${USERS.erin}`,
    );
    // SIGHUP no longer ends the process: it still answers
    expect((await fetch(`http://127.0.0.1:${start.port}/healthz`)).status).toBe(200);
  }, 60_000);

  it("erin's ✅ approves a swap now", async () => {
    const card = await swaps.request(addSimModel(bench, "signal-one"), "gpu-1");
    const id = swaps.swapId(card.ts);
    await swaps.approve(card.ts, USERS.erin);
    expect(await swaps.untilDecided(id, 60_000)).toMatchObject({ approved: true, by: USERS.erin });
    await bench.slack.command(USERS.alice, `cancel ${id}`, { channel: CHANNEL });
    await swaps.untilRecord(id, (r) => r.outcome !== undefined, { what: "the swap to be cancelled" });
  }, 120_000);

  it("SIGHUP with the file as it is says so, and records nothing", async () => {
    const before = (await (await swaps.store()).audit.read({ limit: 100 })).filter(
      (e) => e.kind === "config",
    );
    process.kill(start.pid, "SIGHUP");
    await waitForLog(start.logPath, /"code":"CONFIG_UNCHANGED"/, { what: "the unchanged read" });
    const last = (await codes(start)).at(-1);
    expect(last).toMatchObject({ code: "CONFIG_UNCHANGED", trigger: "signal" });
    expect(last?.msg).toBe("config file read (SIGHUP): it holds the config in use, nothing to change");
    const after = (await (await swaps.store()).audit.read({ limit: 100 })).filter((e) => e.kind === "config");
    expect(after).toEqual(before);
    // the audit stream has each process's one reload, with how it came
    expect(after.map((e) => [e.process, e.detail.slice(0, e.detail.indexOf(","))]).sort()).toEqual(
      [
        [processOf(start, "bot+worker"), "config reloaded (SIGHUP)"],
        [
          processOf(worker, "worker"),
          `config reloaded (${processOf(start, "bot+worker")} loaded a file this process had not read)`,
        ],
      ].sort(),
    );
  });
});
