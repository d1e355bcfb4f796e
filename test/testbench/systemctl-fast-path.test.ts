import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemctlFastPath } from "../../testbench/gpu-host/systemctl-fast-path.ts";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers the monitor's `systemctl is-active <unit>` and the probes' `systemctl show` of MainPID,
 * ActiveState and SubState in the shim's shell wrapper
 * (testbench/gpu-host/systemctl-fast-path.ts) so a thousand hosts can be checked on two cores. It must say
 * exactly what the Node shim says: both are asked about the same unit states and must agree, word and
 * exit code; and the fast answer must not start Node at all (its wrapper points at a script that does
 * not exist).
 */
let root: string;
let fast: string;
let live: ChildProcess;
const DEAD_PID = 4_000_000; // above any pid_max: no such process

/** How the product asks `systemctl show` for what the shell answers (UNIT: the case's unit). */
const SHOW_FORMS = [
  ["show", "-p", "MainPID", "--value", "UNIT"],
  ["show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "UNIT"],
  ["show", "UNIT", "--property=SubState,ActiveState"],
  ["show", "--value", "-pSubState", "UNIT", "-p", "MainPID,MainPID"],
  // the status probes' (src/status/systemd-show.ts)
  [
    "show",
    "UNIT",
    "--property=Id,LoadState,ActiveState,SubState,Result,MainPID,ExecMainStartTimestamp,ActiveEnterTimestamp,UnitFileState,NRestarts,FragmentPath",
  ],
];

const answer = (command: string, args: string[]) => shimAnswer(root, command, args);

async function setState(unit: string, fields: Record<string, unknown>): Promise<void> {
  await writeFile(
    join(root, "state", "units", `${unit}.json`),
    `${JSON.stringify(
      {
        unit,
        invocationId: "x",
        supervisorPid: 0,
        activeState: "inactive",
        subState: "dead",
        mainPid: 0,
        ...fields,
      },
      null,
      2,
    )}\n`,
  );
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "fast-path-"));
  await mkdir(join(root, "state", "units"), { recursive: true });
  fast = join(root, "bin", "systemctl");
  // the fast path in front of a script that does not exist: only an answer the shell gave itself succeeds
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, systemctlFastPath(root));
  live = spawn("sleep", ["600"], { stdio: "ignore" });
});

afterAll(async () => {
  live?.kill();
  await rm(root, { recursive: true, force: true });
});

describe("systemctl is-active answered by the shell", () => {
  const cases: Array<[string, Record<string, unknown> | undefined]> = [
    ["never started (no state file)", undefined],
    ["active, supervisor alive", { activeState: "active", subState: "running", supervisorPid: "LIVE" }],
    [
      "active, supervisor gone, main process alive",
      { activeState: "active", supervisorPid: DEAD_PID, mainPid: "LIVE" },
    ],
    [
      "active, supervisor and main process gone",
      { activeState: "active", supervisorPid: DEAD_PID, mainPid: DEAD_PID },
    ],
    ["activating, supervisor alive", { activeState: "activating", subState: "start", supervisorPid: "LIVE" }],
    ["activating, everything gone", { activeState: "activating", supervisorPid: DEAD_PID }],
    ["failed", { activeState: "failed", subState: "failed", result: "exit-code" }],
    [
      "restarted, with its times",
      {
        activeState: "active",
        subState: "running",
        supervisorPid: "LIVE",
        mainPid: "LIVE",
        result: "success",
        nRestarts: 3,
        execMainStartAt: "2026-12-07T09:59:58.123Z",
        activeEnterAt: "2028-02-29T23:59:59.999Z",
      },
    ],
    [
      "never started, as emptyUnitState writes it",
      { result: "success", nRestarts: 0, execMainStartAt: null, activeEnterAt: null, stateChangeAt: null },
    ],
    ["deactivating, supervisor alive", { activeState: "deactivating", supervisorPid: "LIVE" }],
  ];
  it.each(cases)("%s: the same word and exit code as the Node shim", async (_what, fields) => {
    const unit = `case-${cases.findIndex(([w]) => w === _what)}.service`;
    if (fields !== undefined) {
      const resolved = Object.fromEntries(
        Object.entries(fields).map(([k, v]) => [k, v === "LIVE" ? live.pid : v]),
      );
      await setState(unit, resolved);
    }
    const slow = await answer(process.execPath, [shimScriptPath("systemctl"), "is-active", unit]);
    const quick = await answer(fast, ["is-active", unit]);
    expect(quick).toEqual(slow);
    expect(["active\n", "inactive\n", "activating\n", "deactivating\n", "failed\n"]).toContain(quick.out);
    // the forms of `systemctl show` the final check and the probes ask, the same bytes and exit code
    for (const form of SHOW_FORMS) {
      const args = form.map((a) => (a === "UNIT" ? unit : a));
      const slowShow = await answer(process.execPath, [shimScriptPath("systemctl"), ...args]);
      const quickShow = await answer(fast, args);
      expect(quickShow, args.join(" ")).toEqual(slowShow);
      expect(quickShow.code).toBe(0);
    }
  });

  it("shows a live unit's main process, and 0 once it is gone (the check can fail)", async () => {
    await setState("shown.service", {
      activeState: "active",
      subState: "running",
      supervisorPid: live.pid,
      mainPid: live.pid,
    });
    expect(
      await answer(fast, ["show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "shown"]),
    ).toEqual({
      out: `MainPID=${live.pid}\nActiveState=active\nSubState=running\n`,
      code: 0,
    });
    await setState("shown.service", { activeState: "active", supervisorPid: DEAD_PID, mainPid: DEAD_PID });
    expect(await answer(fast, ["show", "shown.service", "--property=MainPID,SubState", "--value"])).toEqual({
      out: "0\ndead\n",
      code: 0,
    });
  });

  it("reads a name without .service as the service, as systemctl does", async () => {
    await setState("bare.service", { activeState: "active", supervisorPid: live.pid });
    expect(await answer(fast, ["is-active", "bare"])).toEqual({ out: "active\n", code: 0 });
  });

  it("records each call where the bench counts calls", async () => {
    const before = (await readFile(join(root, "state", "calls.jsonl"), "utf8").catch(() => "")).split(
      "\n",
    ).length;
    await answer(fast, ["is-active", "sglang-x.service"]);
    const lines = (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n");
    expect(lines.length).toBe(before);
    const last = JSON.parse(lines.at(-1)!);
    expect(last).toMatchObject({ cmd: "systemctl", argv: ["is-active", "sglang-x.service"] });
    expect(Date.now() - Date.parse(last.at)).toBeLessThan(60_000);
  });

  it("prints the status probes' times as the Node shim does, whatever the date", async () => {
    const form = ["show", "-p", "ExecMainStartTimestamp,ActiveEnterTimestamp,NRestarts,Result", "times"];
    for (const [start, enter] of [
      ["1970-01-01T00:00:00.000Z", "1999-12-31T23:59:59.999Z"],
      ["2000-02-29T12:00:00.000Z", "2100-02-28T01:02:03.004Z"],
      ["2024-03-01T00:00:00Z", "2026-11-29T22:19:18.000Z"],
      ["2027-01-01T08:30:00.500Z", "2400-02-29T00:00:00.000Z"],
      ["", 0],
    ]) {
      await setState("times.service", {
        execMainStartAt: start,
        activeEnterAt: enter,
        nRestarts: 12,
        result: "",
      });
      const slow = await answer(process.execPath, [shimScriptPath("systemctl"), ...form]);
      expect(await answer(fast, form), `${start} ${enter}`).toEqual(slow);
    }
    // what the shell does not print itself: another number, a time it cannot check, an escape
    for (const fields of [
      { nRestarts: 1.5 },
      { execMainStartAt: "2026-02-30T00:00:00.000Z" },
      { activeEnterAt: "2026-12-07 10:00:00" },
      { activeEnterAt: 1_765_000_000_000 },
      { result: 'a"b' },
      { result: { x: 1 } },
    ]) {
      await setState("times.service", fields);
      const result = await answer(fast, form);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, JSON.stringify(fields)).not.toBe(0);
    }
  });

  it("leaves every other form to the Node shim", async () => {
    for (const args of [
      ["is-active", "--quiet", "a.service"],
      ["is-active", "a.service", "b.service"],
      ["status", "a"],
      ["is-active", "a$(id)"],
      ["show", "a.service"],
      ["show", "-p", "Description", "a.service"],
      ["show", "-p", "MainPID,ExecMainPID", "a.service"],
      ["is-enabled", "--quiet", "a.service"],
      ["is-enabled", "a.service", "b.service"],
      ["show", "-p", "MainPID", "a.service", "b.service"],
      ["show", "-p", "MainPID", "--all", "a.service"],
      ["show", "-p", "MainPID"],
      ["show", "-p", "MainPID", "a=b.service"],
    ]) {
      const result = await answer(fast, args);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(result.code, args.join(" ")).not.toBe(3);
    }
  });
});

/** Both answers with stderr too (is-enabled of a unit with no file says so there). */
async function fullAnswer(command: string, args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, {
      env: { ...process.env, MODELSWAP_SANDBOX: root },
    });
    return { out: stdout, err: stderr, code: 0 };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; code?: number };
    return { out: e.stdout ?? "", err: e.stderr ?? "", code: e.code ?? -1 };
  }
}

/** A unit file as modelswap writes one (src/switch: comments, continued ExecStart=, [Install]). */
const PRODUCT_UNIT = `# Written by modelswap for swap sw-1; later swaps write units of their own.
# Model: org/m at commit 43da92d. Caches kept in a directory of this build… (not ASCII: a comment)
[Unit]
Description=SGLang serving org/m@43da92d (modelswap)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
# Start from the local files only.
Environment=HF_HUB_OFFLINE=1
Environment=PYTHONPATH=/srv/models/.modelswap/engines/sglang-0d05226c0b2d/python
ExecStart=/srv/venvs/sglang/bin/python -m sglang.launch_server \\
    --model-path /srv/models/org--m--43da92d546ab \\
    --served-model-name org/m \\
    --tp-size 8
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
`;

describe("systemctl show of LoadState, FragmentPath, UnitFileState and is-enabled answered by the shell", () => {
  const unitDir = () => join(root, "etc", "systemd", "system");
  const FORMS = [
    ["show", "UNIT", "--property=LoadState,ActiveState,FragmentPath"],
    ["show", "UNIT", "--property=FragmentPath", "--value"],
    ["show", "-p", "LoadState", "-p", "ActiveState", "UNIT"],
    ["show", "-pUnitFileState", "--property=SubState,LoadState,MainPID", "UNIT"],
    ["is-enabled", "UNIT"],
  ];
  const cases: Array<[string, string | null, string[]?]> = [
    ["no unit file", null],
    ["modelswap's unit, disabled", PRODUCT_UNIT],
    ["modelswap's unit, enabled", PRODUCT_UNIT, ["multi-user.target.wants"]],
    ["enabled by a dangling link in a hidden .requires directory", PRODUCT_UNIT, [".x.requires"]],
    ["no [Install]: static", "[Service]\nExecStart=/bin/sleep 60\n"],
    ["an empty WantedBy=: static", "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=\nRequiredBy=  \n"],
    ["RequiredBy= only", "[Service]\nExecStart=/bin/true\n[Install]\nRequiredBy=x.target y.target\n"],
    ["no ExecStart=: bad-setting", "[Unit]\nDescription=x\n[Service]\nType=simple\n"],
    ["ExecStart= emptied last: bad-setting", "[Service]\nExecStart=/bin/a\nExecStart=\n"],
    ["ExecStart= emptied, then set", "[Service]\nExecStart=/bin/a\nExecStart=\nExecStart=-/bin/b c\n"],
    ["ExecStart= of prefixes only: bad-setting", "[Service]\nExecStart=-@+!\n[Install]\nWantedBy=a\n"],
    [
      "ExecStart= outside [Service]",
      "ExecStart=/bin/a\n[Unit]\nExecStart=/bin/b\n[Service ]\nExecStart=/bin/c\n",
    ],
    [
      "[Service] twice, spaces around =",
      "[Service]\nType=simple\n[Unit]\n[Service]\n  ExecStart \t=\t /bin/x  \n",
    ],
    ["CRLF lines", "[Service]\r\nExecStart=/bin/x \\\r\n  -y\r\n[Install]\r\nWantedBy=m\r\n"],
    ["a continuation into comments and the end", "[Service]\nExecStart=\\\n# c\n; d\n/bin/x \\"],
    ["a continuation onto an empty line", "[Service]\nExecStart=/bin/x \\\n\n[Install]\nWantedBy=a \\\n"],
    ["a header ending in a backslash", "[Service]\\\nExecStart=/bin/x\n"],
  ];
  it.each(cases)("%s: the same answers as the Node shim", async (what, text, links) => {
    const unit = `file-${cases.findIndex(([w]) => w === what)}.service`;
    await mkdir(unitDir(), { recursive: true });
    if (text !== null) await writeFile(join(unitDir(), unit), text);
    for (const dir of links ?? []) {
      await mkdir(join(unitDir(), dir), { recursive: true });
      await symlink(dir.startsWith(".") ? "/nonexistent" : join(unitDir(), unit), join(unitDir(), dir, unit));
    }
    for (const form of FORMS) {
      const args = form.map((a) => (a === "UNIT" ? unit.replace(/\.service$/, "") : a));
      const slow = await fullAnswer(process.execPath, [shimScriptPath("systemctl"), ...args]);
      const quick = await fullAnswer(fast, args);
      expect(quick, `${what}: ${args.join(" ")}`).toEqual(slow);
    }
  });

  it("leaves unit files and states the shell cannot read as surely to the Node shim", async () => {
    const files: Array<[string, string]> = [
      ["a quoted Environment=", '[Service]\nEnvironment="A=b c"\nExecStart=/bin/x\n'],
      ["an unbalanced quote", "[Service]\nEnvironment='A=b\nExecStart=/bin/x\n"],
      ["a backslash inside", "[Service]\nExecStart=/bin/x a\\tb\n"],
      ["a specifier", "[Service]\nExecStart=/bin/x %i\n"],
      ["a variable", "[Service]\nExecStart=$CMD\n"],
      ["a description not in ASCII", "[Unit]\nDescription=modèle\n[Service]\nExecStart=/bin/x\n"],
      ["a vertical tab", "[Service]\nExecStart=/bin/x\v\n"],
    ];
    await mkdir(unitDir(), { recursive: true });
    for (const [what, text] of files) {
      await writeFile(join(unitDir(), "odd.service"), text);
      for (const args of [
        ["show", "-p", "LoadState", "odd"],
        ["is-enabled", "odd"],
      ]) {
        const result = await answer(fast, args);
        // the wrapper went on to Node, which cannot find the script this wrapper names
        expect(result.code, `${what}: ${args.join(" ")}`).not.toBe(0);
        expect(result.out, what).toBe("");
      }
      // is-active and the other properties do not read the file
      expect((await answer(fast, ["show", "-p", "ActiveState", "odd"])).code).toBe(0);
    }
    await writeFile(join(unitDir(), "odd.service"), "[Service]\nExecStart=/bin/x\n");
    await writeFile(join(root, "state", "faults.json"), '{\n  "strictDaemonReload": true\n}\n');
    expect((await answer(fast, ["show", "-p", "LoadState", "odd"])).code).not.toBe(0);
    await writeFile(join(root, "state", "faults.json"), "{}\n");
    expect((await answer(fast, ["show", "-p", "LoadState", "odd"])).code).toBe(0);
    // a unit whose file is gone while its loaded definition and a state remain
    await rm(join(unitDir(), "odd.service"));
    await mkdir(join(root, "state", "loaded"), { recursive: true });
    await writeFile(join(root, "state", "loaded", "odd.service.json"), '{"text":"","mtimeMs":0}');
    await setState("odd.service", { activeState: "failed" });
    // (the wrapper went on to Node, which cannot find the script this wrapper names)
    for (const args of [
      ["is-enabled", "odd"],
      ["show", "-p", "FragmentPath", "odd"],
    ])
      expect((await fullAnswer(fast, args)).err, args.join(" ")).toMatch(/Cannot find module/);
  });
});
