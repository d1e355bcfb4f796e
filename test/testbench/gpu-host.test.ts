import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readlink, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSimGpuHost, type SimGpuHost } from "../../testbench/gpu-host/index.ts";
import { isAlive, processGroupMembers, registerGpuUsage } from "../../testbench/gpu-host/shims/sandbox.mjs";
import { interpretUnit, parseCommandLine } from "../../testbench/gpu-host/shims/unit-file.mjs";
import { until } from "../../testbench/until.ts";

// The real captures, copied into the repository from the team's shared fixtures.
const FIXTURES = new URL("../fixtures/gpu-host", import.meta.url).pathname;
if (!existsSync(join(FIXTURES, "h200-1gpu")))
  throw new Error("the real GPU host captures (test/fixtures/gpu-host) are missing");
const fixture = (name: string) => readFileSync(join(FIXTURES, "h200-1gpu", name), "utf8");

const FIXTURE_QUERY =
  "--query-gpu=index,name,uuid,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw,compute_cap,driver_version";
const NODE = process.execPath;

const tempRoots: string[] = [];
async function newHost(
  gpus: Parameters<typeof createSimGpuHost>[0]["gpus"],
  name = "gpu-a",
): Promise<SimGpuHost> {
  const root = await mkdtemp(join(tmpdir(), "simhost-"));
  tempRoots.push(root);
  return await createSimGpuHost({ root, name, gpus, hubUrl: "http://127.0.0.1:1" });
}

afterAll(async () => {
  for (const root of tempRoots) await rm(root, { recursive: true, force: true });
});

describe("nvidia-smi shim", () => {
  let host: SimGpuHost;
  beforeAll(async () => {
    host = await newHost("h200-1gpu");
  });
  afterAll(async () => {
    await host.stop();
  });

  it("reproduces the captured --query-gpu output byte for byte", async () => {
    const r = await host.exec(`nvidia-smi ${FIXTURE_QUERY} --format=csv,noheader,nounits`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(fixture("nvidia-smi-query.csv"));
  });

  it("prints the captured summary table (apart from the clock line)", async () => {
    const r = await host.nvidiaSmi();
    const expected = fixture("nvidia-smi.txt").split("\n");
    const actual = r.stdout.split("\n");
    expect(actual.slice(1)).toEqual(expected.slice(1));
    expect(actual[0]).toMatch(/^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4} {7}$/);
  });

  it("prints headers with units, and units on values without nounits", async () => {
    const r = await host.nvidiaSmi(
      "--query-gpu=index,pci.bus_id,memory.total,utilization.gpu,power.draw,power.limit,count",
      "--format=csv",
    );
    expect(r.stdout).toBe(
      "index, pci.bus_id, memory.total [MiB], utilization.gpu [%], power.draw [W], power.limit [W], count\n" +
        "0, 00000000:00:06.0, 143771 MiB, 0 %, 80.76 W, 700.00 W, 1\n",
    );
  });

  it("rejects an unknown field exactly like the real tool (exit 2)", async () => {
    const r = await host.nvidiaSmi("--query-gpu=index,bogus.field", "--format=csv");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(fixture("nvidia-smi-bad-field.txt").split("rc=2")[0]);
  });

  it("reports an out-of-range -i like the real tool (exit 6)", async () => {
    const r = await host.nvidiaSmi("-i", "5", "--query-gpu=index", "--format=csv,noheader");
    expect(r.code).toBe(6);
    expect(r.stdout).toBe("No devices were found\n");
  });

  it("shows load registered by live processes, in the captured busy formats", async () => {
    const worker = spawn("sleep", ["30"], { stdio: "ignore" });
    const pid = worker.pid ?? 0;
    try {
      registerGpuUsage({ pid, gpus: [0], memMiB: 20296, util: 100, processName: "python3" }, host.root);
      const apps = await host.nvidiaSmi(
        "--query-compute-apps=pid,process_name,used_memory,gpu_uuid",
        "--format=csv",
      );
      expect(apps.stdout).toBe(
        fixture("nvidia-smi-apps-busy.csv")
          .replace("412,", `${pid},`)
          .replace("GPU-699342db-5a16-7260-f6ea-698673eaafab", "GPU-8fe967e7-edb7-eb37-e78a-57cc733ec9e5"),
      );
      const query = await host.nvidiaSmi(FIXTURE_QUERY, "--format=csv,noheader,nounits");
      expect(query.stdout.trim().split(", ")).toEqual([
        "0",
        "NVIDIA H200",
        "GPU-8fe967e7-edb7-eb37-e78a-57cc733ec9e5",
        "143771",
        "20305",
        "122851",
        "100",
        "57",
        "680.05",
        "9.0",
        "580.159.04",
      ]);
      const table = (await host.nvidiaSmi()).stdout.split("\n");
      const busy = fixture("nvidia-smi-busy.txt").split("\n");
      expect(table[9]).toBe(busy[9]?.replace("679W", "680W"));
      expect(table[18]).toBe(busy[18]?.replace("             412", String(pid).padStart(16)));
      expect(table.slice(10, 18)).toEqual(busy.slice(10, 18));
    } finally {
      worker.kill("SIGKILL");
    }
    // A dead process's usage is ignored.
    await until(async () => !isAlive(pid), { what: `process ${pid} to be gone`, timeoutMs: 5000 });
    const idle = await host.nvidiaSmi("--query-compute-apps=pid,used_memory", "--format=csv,noheader");
    expect(idle.stdout).toBe("");
  });

  it("lists GPUs with -L and answers --version", async () => {
    expect((await host.nvidiaSmi("-L")).stdout).toBe(
      "GPU 0: NVIDIA H200 (UUID: GPU-8fe967e7-edb7-eb37-e78a-57cc733ec9e5)\n",
    );
    expect((await host.nvidiaSmi("--version")).stdout).toContain("DRIVER version      : 580.159.04");
  });

  it("fails like a broken driver, and hangs when told to", async () => {
    await host.setFault("nvidiaSmi", "driver-error");
    const r = await host.nvidiaSmi("-L");
    expect(r.code).toBe(9);
    expect(r.stdout).toContain(
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
    );
    await host.setFault("nvidiaSmi", "hang");
    const started = Date.now();
    const hung = await new Promise<string>((resolveRun) => {
      const child = spawn(join(host.binDir, "nvidia-smi"), [], { stdio: "ignore" });
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolveRun("timed out");
      }, 600);
      child.on("exit", () => {
        clearTimeout(timer);
        resolveRun("exited");
      });
    });
    expect(hung).toBe("timed out");
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    await host.clearFaults();
    expect((await host.nvidiaSmi("-L")).code).toBe(0);
  });
});

describe("nvidia-smi GPU sets", () => {
  it.each([
    ["8x-h200", "NVIDIA H200", "143771", "9.0", "700.00"],
    ["8x-rtx-pro-6000-blackwell", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "97887", "12.0", "600.00"],
    ["8x-b200", "NVIDIA B200", "183359", "10.0", "1000.00"],
    ["8x-a100", "NVIDIA A100-SXM4-80GB", "81920", "8.0", "400.00"],
  ] as const)("%s has 8 distinct GPUs with the right specs", async (set, name, mem, cc, limit) => {
    const host = await newHost(set);
    const r = await host.nvidiaSmi(
      "--query-gpu=index,name,uuid,pci.bus_id,memory.total,compute_cap,power.limit,count",
      "--format=csv,noheader,nounits",
    );
    const rows = r.stdout
      .trim()
      .split("\n")
      .map((line) => line.split(", "));
    expect(rows).toHaveLength(8);
    expect(new Set(rows.map((row) => row[2])).size).toBe(8);
    expect(new Set(rows.map((row) => row[3])).size).toBe(8);
    for (const [i, row] of rows.entries()) {
      expect(row[0]).toBe(String(i));
      expect(row[1]).toBe(name);
      expect(row[2]).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(row.slice(4)).toEqual([mem, cc, limit, "8"]);
    }
    // Deterministic: a second host with the same set has the same UUIDs.
    const again = await newHost(set);
    expect((await again.nvidiaSmi("-L")).stdout).toBe((await host.nvidiaSmi("-L")).stdout);
    // The table truncates long names like the real tool and shows every GPU.
    const table = (await host.nvidiaSmi()).stdout;
    expect(table.split("\n").filter((l) => /^\|\s+\d+ {2}NVIDIA/.test(l))).toHaveLength(8);
    if (set === "8x-rtx-pro-6000-blackwell")
      expect(table).toContain("|   0  NVIDIA RTX PRO 6000 Blac...    On  |");
    expect(table.split("\n").every((l) => l.length === 0 || l.length === 91 || l.length === 31)).toBe(true);
    // -i selects GPUs; usage on several GPUs is reported per GPU.
    registerGpuUsage({ pid: process.pid, gpus: [2, 3], memMiB: 1000, util: 40 }, host.root);
    const sel = await host.nvidiaSmi(
      "-i",
      "3",
      "--query-gpu=index,memory.used,utilization.gpu",
      "--format=csv,noheader",
    );
    expect(sel.stdout).toBe("3, 1009 MiB, 40 %\n");
    const apps = await host.nvidiaSmi(
      "--query-compute-apps=pid,used_memory",
      "--format=csv,noheader,nounits",
    );
    expect(apps.stdout).toBe(`${process.pid}, 1000\n${process.pid}, 1000\n`);
  });
});

describe("unit file parsing", () => {
  it("splits ExecStart like systemd, with continuations, quotes and variables", () => {
    const unit = interpretUnit(
      [
        "[Unit]",
        "Description=SGLang (test)",
        "[Service]",
        'Environment="HF_HOME=/data/hf cache" CUDA_VISIBLE_DEVICES=0,1',
        "Environment=PORT=30000",
        "ExecStart=/opt/venv/bin/python -m sglang.launch_server \\",
        "  --model-path '/models/Qwen 3' \\",
        "  # a comment inside a continuation",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: systemd's own ${VAR} syntax
        '  --port ${PORT} --served-model-name "a \\"b\\"" $EXTRA',
        "Restart=on-failure",
        "RestartSec=5",
        "[Install]",
        "WantedBy=multi-user.target",
      ].join("\n"),
      "/x/sglang.service",
      "sglang.service",
    );
    expect(unit.environment).toEqual({
      HF_HOME: "/data/hf cache",
      CUDA_VISIBLE_DEVICES: "0,1",
      PORT: "30000",
    });
    expect(unit.execStart?.argv).toEqual([
      "/opt/venv/bin/python",
      "-m",
      "sglang.launch_server",
      "--model-path",
      "/models/Qwen 3",
      "--port",
      "30000",
      "--served-model-name",
      'a "b"',
    ]);
    expect(unit.restart).toBe("on-failure");
    expect(unit.restartMs).toBe(5000);
    expect(unit.wantedBy).toEqual(["multi-user.target"]);
    expect(parseCommandLine("-/bin/true %n", {}, "x.service")).toMatchObject({
      path: "/bin/true",
      argv: ["/bin/true", "x.service"],
      ignoreErrors: true,
    });
    expect(parseCommandLine("/bin/echo $WORDS", { WORDS: "a  b" }).argv).toEqual(["/bin/echo", "a", "b"]);
  });
});

describe("systemctl / journalctl shims", () => {
  let host: SimGpuHost;
  beforeAll(async () => {
    host = await newHost("8x-rtx-pro-6000-blackwell", "gpu-b");
  });
  afterAll(async () => {
    await host.stop();
  });

  const longRunning = (extra = "") => `[Unit]
Description=Long runner
[Service]
Environment="GREETING=hello world" MODE=test
WorkingDirectory=/tmp
ExecStart=${NODE} -e "console.log(process.env.GREETING + ' ' + process.cwd()); console.error('to stderr'); setInterval(() => console.log('tick'), 100)"
${extra}
[Install]
WantedBy=multi-user.target
`;

  it("starts a real long-running process, journals its output and stops it", async () => {
    await host.installUnit("runner", longRunning());
    const start = await host.exec("systemctl start runner.service");
    expect(start).toMatchObject({ code: 0, stderr: "" });
    const active = await host.systemctl("is-active", "runner");
    expect(active).toMatchObject({ code: 0, stdout: "active\n" });
    const state = await host.unitState("runner");
    expect(state).toMatchObject({
      loadState: "loaded",
      activeState: "active",
      subState: "running",
      result: "success",
    });
    expect(state.mainPid).toBeGreaterThan(0);
    expect(isAlive(state.mainPid)).toBe(true);
    expect(state.execMainStartTimestamp).toMatch(/^[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(state.raw.ExecStart).toMatch(
      new RegExp(
        `^\\{ path=${NODE} ; argv\\[\\]=${NODE} -e .* ; ignore_errors=no ; start_time=\\[.+ UTC\\] ; stop_time=\\[n/a\\] ; pid=${state.mainPid} ; code=\\(null\\) ; status=0/0 \\}$`,
      ),
    );
    expect(state.environment).toBe('"GREETING=hello world" MODE=test');
    const picked = await host.systemctl("show", "runner", "-p", "SubState,ActiveState,MainPID");
    expect(picked.stdout).toBe(`MainPID=${state.mainPid}\nActiveState=active\nSubState=running\n`);
    const values = await host.systemctl(
      "show",
      "runner",
      "--property=ActiveState",
      "--property=NRestarts",
      "--value",
    );
    expect(values.stdout).toBe("0\nactive\n");

    await until(async () => (await host.journal("runner")).includes("tick"), {
      what: "the runner's first tick in its journal",
      timeoutMs: 5000,
    });
    const journal = await host.journal("runner");
    expect(journal).toContain("Started runner.service - Long runner.");
    expect(journal).toContain("hello world /tmp");
    expect(journal).toContain("to stderr");
    const short = await host.journalctl("-u", "runner", "-n", "3", "--no-pager");
    const lines = short.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).toMatch(
        new RegExp(`^[A-Z][a-z]{2} \\d\\d \\d\\d:\\d\\d:\\d\\d gpu-b node\\[${state.mainPid}\\]: `),
      );
    }
    const cat = await host.journalctl("-u", "runner.service", "-o", "cat", "--lines=200");
    expect(cat.stdout.split("\n")[0]).toBe("Started runner.service - Long runner.");
    const status = await host.systemctl("status", "runner", "--no-pager");
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("● runner.service - Long runner");
    expect(status.stdout).toContain(`Main PID: ${state.mainPid} (node)`);

    const stop = await host.systemctl("stop", "runner");
    expect(stop.code).toBe(0);
    expect(isAlive(state.mainPid)).toBe(false);
    expect(processGroupMembers(state.mainPid)).toEqual([]);
    const after = await host.unitState("runner");
    expect(after).toMatchObject({ activeState: "inactive", subState: "dead", result: "success", mainPid: 0 });
    expect(await host.systemctl("is-active", "runner")).toMatchObject({ code: 3, stdout: "inactive\n" });
    expect(await host.journal("runner")).toMatch(
      /Stopping runner\.service - Long runner\.\.\.\n.*\nStopped runner\.service - Long runner\.$/s,
    );
  });

  it("stops a unit once the process that made the sandbox is gone (an interrupted bench leaves no engine running)", async () => {
    // the sandbox's owner is a process this test kills, as Ctrl-C or a SIGKILL ends a bench
    const owner = spawn("sleep", ["300"], { stdio: "ignore" });
    const configFile = join(host.root, "state", "config.json");
    const config = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
    await writeFile(configFile, JSON.stringify({ ...config, ownerPid: owner.pid }));
    try {
      await host.installUnit("orphan", longRunning());
      expect((await host.systemctl("start", "orphan")).code).toBe(0);
      const { mainPid } = await host.unitState("orphan");
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(isAlive(mainPid)).toBe(true); // the owner lives: the unit runs on
      owner.kill("SIGKILL");
      await until(async () => !isAlive(mainPid), {
        what: "the orphaned unit's process to stop",
        timeoutMs: 15_000,
      });
      await until(async () => (await host.unitState("orphan")).activeState === "inactive", {
        what: "the orphaned unit to be inactive",
        timeoutMs: 5000,
      });
    } finally {
      owner.kill("SIGKILL");
      await writeFile(configFile, JSON.stringify({ ...config, ownerPid: process.pid }));
    }
  });

  it("marks a unit whose process exits 1 as failed (Result=exit-code)", async () => {
    await host.installUnit("crasher", `[Service]\nExecStart=/bin/sh -c "echo boom; exit 1"\n`);
    expect((await host.systemctl("start", "crasher")).code).toBe(0);
    const state = await until(
      async () => {
        const s = await host.unitState("crasher");
        return s.activeState === "failed" && s;
      },
      { what: "crasher to fail", timeoutMs: 5000 },
    );
    expect(state).toMatchObject({
      subState: "failed",
      result: "exit-code",
      execMainStatus: 1,
      execMainCode: 1,
      mainPid: 0,
    });
    expect(await host.systemctl("is-active", "crasher")).toMatchObject({ code: 3, stdout: "failed\n" });
    expect(await host.systemctl("is-failed", "crasher")).toMatchObject({ code: 0, stdout: "failed\n" });
    const journal = await host.journal("crasher");
    expect(journal).toContain("boom");
    expect(journal).toContain("crasher.service: Main process exited, code=exited, status=1/FAILURE");
    expect(journal).toContain("crasher.service: Failed with result 'exit-code'.");
    const status = await host.systemctl("status", "crasher");
    expect(status.code).toBe(3);
    expect(status.stdout).toContain("Active: failed (Result: exit-code)");
    await host.systemctl("reset-failed", "crasher");
    expect((await host.systemctl("is-active", "crasher")).stdout).toBe("inactive\n");
  });

  it("fails the start job when ExecStartPre fails, and the unit when ExecStart cannot be executed", async () => {
    await host.installUnit("prefail", `[Service]\nExecStartPre=/bin/false\nExecStart=/bin/sleep 300\n`);
    const pre = await host.systemctl("start", "prefail");
    expect(pre.code).toBe(1);
    expect(pre.stderr).toContain(
      "Job for prefail.service failed because the control process exited with error code.",
    );
    expect(await host.unitState("prefail")).toMatchObject({ activeState: "failed", result: "exit-code" });
    expect(await host.journal("prefail")).toContain(
      "prefail.service: Control process exited, code=exited, status=1/FAILURE",
    );

    await host.installUnit("noexec", `[Service]\nExecStart=${host.venvDir}/bin/missing -m x\n`);
    expect((await host.systemctl("start", "noexec")).code).toBe(0);
    const state = await until(
      async () => {
        const s = await host.unitState("noexec");
        return s.activeState === "failed" && s;
      },
      { what: "noexec to fail", timeoutMs: 5000 },
    );
    expect(state.execMainStatus).toBe(203);
    expect(await host.journal("noexec")).toContain(
      "noexec.service: Main process exited, code=exited, status=203/EXEC",
    );
  });

  it("restarts a failing unit per Restart=on-failure, then gives up like StartLimitBurst", async () => {
    await host.installUnit(
      "flappy",
      `[Unit]\nDescription=Flappy\n[Service]\nExecStart=/bin/sh -c "echo starting; exit 3"\nRestart=on-failure\nRestartSec=30\n`,
    );
    expect((await host.systemctl("start", "flappy")).code).toBe(0);
    const state = await until(
      async () => {
        const s = await host.unitState("flappy");
        return s.activeState === "failed" && s;
      },
      { what: "flappy to run out of restarts", timeoutMs: 8000 },
    );
    expect(state).toMatchObject({ result: "exit-code", nRestarts: 5, execMainStatus: 3 });
    const journal = await host.journal("flappy");
    expect(journal.match(/^starting$/gm)).toHaveLength(5);
    expect(journal).toContain("flappy.service: Scheduled restart job, restart counter is at 5.");
    expect(journal).toContain("flappy.service: Start request repeated too quickly.");
    expect(journal.trimEnd().split("\n").at(-1)).toBe("Failed to start flappy.service - Flappy.");
    // Still rate limited until reset-failed.
    const again = await host.systemctl("start", "flappy");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("Job for flappy.service failed.");
  });

  it("enables and disables with --now", async () => {
    await host.installUnit("svc", longRunning());
    const enable = await host.systemctl("enable", "--now", "svc");
    expect(enable.code).toBe(0);
    const link = join(host.unitDir, "multi-user.target.wants", "svc.service");
    expect(enable.stderr).toBe(`Created symlink ${link} → ${join(host.unitDir, "svc.service")}.\n`);
    expect(await readlink(link)).toBe(join(host.unitDir, "svc.service"));
    expect(await host.systemctl("is-enabled", "svc")).toMatchObject({ code: 0, stdout: "enabled\n" });
    const on = await host.unitState("svc");
    expect(on).toMatchObject({ activeState: "active", unitFileState: "enabled" });
    const listed = await host.systemctl("list-units", "--type=service", "--all", "--no-legend", "--plain");
    expect(listed.stdout).toMatch(/^svc\.service +loaded +active +running +Long runner$/m);
    const files = await host.systemctl("list-unit-files", "--type=service", "--no-legend");
    expect(files.stdout).toMatch(/^svc\.service +enabled +enabled$/m);

    const disable = await host.systemctl("disable", "--now", "svc");
    expect(disable.code).toBe(0);
    expect(disable.stderr).toBe(`Removed "${link}".\n`);
    expect(existsSync(link)).toBe(false);
    expect(await host.systemctl("is-enabled", "svc")).toMatchObject({ code: 1, stdout: "disabled\n" });
    expect(await host.unitState("svc")).toMatchObject({ activeState: "inactive", unitFileState: "disabled" });
    expect(isAlive(on.mainPid)).toBe(false);
  });

  it("reports NeedDaemonReload after a unit file changes, until daemon-reload", async () => {
    await host.installUnit("reloadme", `[Service]\nExecStart=/bin/sleep 300\n`);
    expect((await host.systemctl("daemon-reload")).code).toBe(0);
    expect((await host.unitState("reloadme")).needDaemonReload).toBe(false);
    await host.installUnit("reloadme", `[Service]\nExecStart=/bin/sleep 200\n`);
    const future = new Date(Date.now() + 5000);
    await utimes(join(host.unitDir, "reloadme.service"), future, future);
    expect((await host.unitState("reloadme")).needDaemonReload).toBe(true);
    const start = await host.systemctl("start", "reloadme");
    expect(start.stderr).toContain("changed on disk. Run 'systemctl daemon-reload' to reload units.");
    await host.setFault("daemonReloadFails", true);
    const failed = await host.systemctl("daemon-reload");
    expect(failed.code).toBe(1);
    expect((await host.unitState("reloadme")).needDaemonReload).toBe(true);
    await host.clearFaults();
    expect((await host.systemctl("daemon-reload")).code).toBe(0);
    expect((await host.unitState("reloadme")).needDaemonReload).toBe(false);
    await host.systemctl("stop", "reloadme");
  });

  it("handles unknown units like systemd", async () => {
    const show = await host.systemctl(
      "show",
      "nosuch",
      "-p",
      "Id,LoadState,ActiveState,SubState,UnitFileState",
    );
    expect(show).toMatchObject({
      code: 0,
      stdout: "Id=nosuch.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\n",
    });
    expect(await host.systemctl("start", "nosuch")).toMatchObject({
      code: 5,
      stderr: "Failed to start nosuch.service: Unit nosuch.service not found.\n",
    });
    expect(await host.systemctl("is-active", "nosuch")).toMatchObject({ code: 3, stdout: "inactive\n" });
    expect((await host.systemctl("status", "nosuch")).code).toBe(4);
    expect((await host.journalctl("-u", "nosuch", "--no-pager")).stdout).toBe("-- No entries --\n");
  });

  it("fails verbs on demand (systemctlFails) and records every call", async () => {
    await host.installUnit("faulty", `[Service]\nExecStart=/bin/sleep 300\n`);
    await host.setFault("systemctlFails", ["start"]);
    const r = await host.systemctl("start", "faulty");
    expect(r).toMatchObject({
      code: 1,
      stderr:
        'Job for faulty.service failed because the control process exited with error code.\nSee "systemctl status faulty.service" and "journalctl -xeu faulty.service" for details.\n',
    });
    expect((await host.unitState("faulty")).activeState).toBe("inactive");
    await host.clearFaults();
    const calls = await host.calls();
    expect(calls.some((c) => c.cmd === "systemctl" && c.argv.join(" ") === "start faulty")).toBe(true);
    expect(calls.every((c) => typeof c.at === "string" && Array.isArray(c.argv))).toBe(true);
  });

  it("survives concurrent starts of one unit: a single main process", async () => {
    await host.installUnit("racy", `[Service]\nExecStart=/bin/sleep 300\n`);
    const results = await Promise.all([1, 2, 3, 4].map(() => host.systemctl("start", "racy")));
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);
    const state = await host.unitState("racy");
    expect(state.activeState).toBe("active");
    const supervisors = readdirSync("/proc")
      .filter((entry) => /^\d+$/.test(entry) && isAlive(Number(entry)))
      .filter((entry) => {
        try {
          const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
          return (
            cmd.includes("unit-supervisor.mjs") && cmd.includes(host.root) && cmd.includes("racy.service")
          );
        } catch {
          return false;
        }
      });
    expect(supervisors).toHaveLength(1);
    expect(isAlive(state.mainPid)).toBe(true);
  });

  it("kills a process that ignores SIGTERM after the stop timeout", async () => {
    await host.setFault("stopTimeoutSec", 0.5);
    await host.installUnit(
      "stubborn",
      `[Service]\nExecStart=${NODE} -e "process.on('SIGTERM', () => console.log('ignoring TERM')); console.log('handler set'); setInterval(() => {}, 1000)"\n`,
    );
    await host.systemctl("start", "stubborn");
    const { mainPid } = await host.unitState("stubborn");
    // a SIGTERM before node has set its handler would end it at once
    await until(async () => (await host.journal("stubborn")).includes("handler set"), {
      what: "stubborn's SIGTERM handler",
      timeoutMs: 5000,
    });
    const started = Date.now();
    expect((await host.systemctl("stop", "stubborn")).code).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(isAlive(mainPid)).toBe(false);
    const journal = await host.journal("stubborn");
    expect(journal).toContain("ignoring TERM");
    expect(journal).toContain("stubborn.service: State 'stop-sigterm' timed out. Killing.");
    expect((await host.unitState("stubborn")).activeState).toBe("inactive");
    await host.clearFaults();
  });

  it("stop() leaves no process of the host behind", async () => {
    await host.installUnit(
      "tree",
      `[Service]\nExecStart=/bin/sh -c "sleep 300 & sleep 300 & wait"\nRestart=always\n`,
    );
    await host.installUnit("solo", `[Service]\nExecStart=/bin/sleep 300\n`);
    await host.systemctl("start", "tree", "solo");
    const tree = await host.unitState("tree");
    await until(() => processGroupMembers(tree.mainPid).length === 3, {
      what: "the unit's three processes",
      timeoutMs: 5000,
    });
    // A detached process started by a shim outside any unit (like a nohup'd download).
    await writeFile(
      join(host.root, "detached.sh"),
      "#!/bin/sh\nsetsid sleep 300 >/dev/null 2>&1 < /dev/null &\n",
      {
        mode: 0o755,
      },
    );
    await host.exec(`MODELSWAP_SANDBOX='${host.root}' ${join(host.root, "detached.sh")}`);
    const before = await host.exec(
      `grep -l 'MODELSWAP_SANDBOX=${host.root}' /proc/[0-9]*/environ 2>/dev/null | wc -l`,
    );
    expect(Number(before.stdout.trim())).toBeGreaterThanOrEqual(5);

    await host.stop();
    const members = processGroupMembers(tree.mainPid);
    expect(members).toEqual([]);
    const leftovers = await host.exec(
      `for f in /proc/[0-9]*/environ; do if tr '\\0' '\\n' < "$f" 2>/dev/null | grep -qx 'MODELSWAP_SANDBOX=${host.root}'; then p=\${f#/proc/}; p=\${p%/environ}; s=$(awk '{print $3}' /proc/$p/stat 2>/dev/null); [ "$s" != Z ] && echo $p; fi; done; true`,
    );
    expect(
      leftovers.stdout
        .trim()
        .split("\n")
        .filter((p) => p !== "" && Number(p) !== process.pid),
    ).toEqual([]);
    expect((await host.unitState("tree")).activeState).toBe("inactive");
  });
});

describe("sudo shim", () => {
  let host: SimGpuHost;
  beforeAll(async () => {
    host = await newHost("h200-1gpu", "gpu-s");
  });

  it("lists the rules docs/operations.md gives, in sudo's format, without a password", async () => {
    const listing = await host.exec("sudo -n -l");
    expect(listing.code).toBe(0);
    expect(listing.stdout).toMatch(/^Matching Defaults entries for \S+ on gpu-s:\n {4}env_reset, /);
    expect(listing.stdout).toContain(`may run the following commands on gpu-s:\n    (root) NOPASSWD: `);
    expect(listing.stdout).toContain(
      `${host.binDir}/systemctl ^(enable|disable) --now (sglang|vllm)-[a-z0-9-]+[.]service$`,
    );
  });

  it("-l <command>: the resolved command when the rules allow it, exit 1 and nothing when not", async () => {
    const allowed = await host.exec("sudo -n -l systemctl enable --now sglang-qwen.service");
    expect(allowed).toMatchObject({
      code: 0,
      stdout: `${host.binDir}/systemctl enable --now sglang-qwen.service\n`,
    });
    const tee = await host.exec(`sudo -n -l tee ${host.unitDir}/sglang-qwen.service /etc/shadow`);
    expect(tee).toMatchObject({ code: 1, stdout: "" });
    expect((await host.exec("sudo -n -l systemctl restart sglang-qwen.service")).code).toBe(1);
  });

  it("runs an allowed command, refuses another with sudo's words, and follows the sudoRules fault", async () => {
    const written = await host.exec(
      `echo '[Unit]' | sudo -n tee ${host.unitDir}/sglang-new.service > /dev/null && cat ${host.unitDir}/sglang-new.service`,
    );
    expect(written).toMatchObject({ code: 0, stdout: "[Unit]\n" });
    const refused = await host.exec("sudo -n systemctl stop sglang-new.service");
    expect(refused).toMatchObject({ code: 1, stderr: "sudo: a password is required\n" });
    await host.setFault("sudoRules", []);
    try {
      expect(await host.exec("sudo -n -l")).toMatchObject({
        code: 1,
        stderr: "sudo: a password is required\n",
      });
      expect((await host.exec("sudo -n systemctl daemon-reload")).code).toBe(1);
    } finally {
      await host.clearFaults();
    }
  });
});
