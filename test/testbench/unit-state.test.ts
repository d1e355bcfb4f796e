import { type ChildProcess, execFile, spawn } from "node:child_process";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSimGpuHost, type SimGpuHost } from "../../testbench/gpu-host/index.ts";
import { writeJsonAtomic } from "../../testbench/gpu-host/shims/sandbox.mjs";
import { shimScriptPath } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * SimGpuHost.systemctl runs systemctl's read-only verbs (unitState's show --all, the campaign's
 * list-units, …) in the test's own process with the shim's code instead of starting the Node shim each
 * poll. It must answer what the shim answers — stdout, stderr and exit code; show's *Monotonic properties
 * (microseconds since boot, which each process derives from the clock and the uptime of its own start)
 * and status's "ago" aside — record the call as the shim does, still wait on a hold of systemctl, and
 * leave every other verb to the wrapper.
 */
let host: SimGpuHost;
let dir: { path: string; remove(): Promise<void> };
let live: ChildProcess;

/** The Node shim's own answer. */
async function shim(args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [shimScriptPath("systemctl"), ...args],
      {
        env: { ...process.env, MODELSWAP_SANDBOX: host.root },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; code?: number };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** An answer without what differs between two processes or two seconds. */
const steady = (r: { code: number; stdout: string; stderr: string }) => ({
  ...r,
  stdout: r.stdout.replace(/^(\w+Monotonic)=\d+$/gm, "$1=").replace(/; [\w ]+ ago$/gm, "; ago"),
});

beforeAll(async () => {
  dir = await tempDir("unit-state-");
  host = await createSimGpuHost({ root: dir.path, name: "gpu-1", gpus: "h200-1gpu" });
  live = spawn("sleep", ["600"], { stdio: "ignore" });
});

afterAll(async () => {
  live?.kill();
  await host.stop();
  await dir.remove();
});

describe("SimGpuHost.unitState", () => {
  it("answers each read-only verb as the Node shim does, for each kind of unit", async () => {
    await host.installUnit(
      "sglang-a",
      '[Unit]\nDescription=A\n[Service]\nEnvironment="X=1 2" Y=3\nExecStart=/bin/sleep 600\nRestart=on-failure\n[Install]\nWantedBy=multi-user.target\n',
    );
    await host.installUnit("bad", "[Service]\nType=simple\n");
    await host.installUnit("broken", "[Service]\nEnvironment='A=b\nExecStart=/bin/true\n");
    writeJsonAtomic(join(host.root, "state", "units", "sglang-a.service.json"), {
      unit: "sglang-a.service",
      invocationId: "abc",
      supervisorPid: live.pid,
      activeState: "active",
      subState: "running",
      result: "success",
      mainPid: live.pid,
      execMainPid: live.pid,
      execMainStartAt: "2026-12-07T10:00:00.000Z",
      activeEnterAt: "2026-12-07T10:00:05.000Z",
      stateChangeAt: "2026-12-07T10:00:05.000Z",
      nRestarts: 2,
    });
    await host.systemctl("enable", "sglang-a");
    const forms = [
      ["list-units", "--type=service", "--all", "--no-legend", "--plain"],
      ["list-units"],
      [],
      ["list-units", "sglang*", "--state=active"],
      ["list-unit-files", "--type=service", "--no-legend"],
      ["list-unit-files"],
      ["show"],
      ["show", "--bogus", "x"],
    ];
    for (const unit of ["sglang-a", "bad", "broken", "never-written"])
      forms.push(
        ["show", `${unit}.service`, "--all"],
        ["show", unit],
        ["show", "-p", "MainPID,LoadState", "--value", unit],
        ["is-active", unit],
        ["is-active", "--quiet", unit, "bad"],
        ["is-enabled", unit],
        ["is-failed", unit],
        ["cat", unit],
        ["status", unit],
        ["status", "--no-pager", "-n", "3", unit],
      );
    // without the wrapper: an answer that went through it would fail
    const wrapper = join(host.binDir, "systemctl");
    await rename(wrapper, `${wrapper}.away`);
    try {
      for (const args of forms) {
        const here = await host.systemctl(...args);
        expect(steady(here), args.join(" ")).toEqual(steady(await shim(args)));
      }
    } finally {
      await rename(`${wrapper}.away`, wrapper);
    }
    expect((await host.unitState("sglang-a")).mainPid).toBe(live.pid);
    expect((await host.unitState("bad")).loadState).toBe("bad-setting");
    // 48 starts of the Node shim, one after another: over a minute on a 2-core machine the rest of the
    // suite keeps busy (a run on 2026-12-07 timed out at 60 s, and its wrapper, still away, failed the next test)
  }, 240_000);

  it("records the call as the shim does", async () => {
    await host.unitState("sglang-a");
    expect((await host.calls()).at(-1)).toMatchObject({
      cmd: "systemctl",
      argv: ["show", "sglang-a.service", "--all"],
    });
  });

  it("waits on a hold of systemctl that matches it, as the wrapper does", async () => {
    await host.hold("systemctl", "show sglang-a.service");
    let done = false;
    const state = host.unitState("sglang-a").then((s) => {
      done = true;
      return s;
    });
    await host.waitHeld("systemctl");
    expect(done).toBe(false);
    // a hold that does not match lets it through at once
    await host.hold("systemctl", "enable");
    expect((await host.unitState("bad")).loadState).toBe("bad-setting");
    await host.release("systemctl");
    expect((await state).activeState).toBe("active");
    await rm(join(host.root, "state", "held"), { recursive: true, force: true });
  });
});
