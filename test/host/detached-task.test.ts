import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detachedStatus, startDetached, stopDetached } from "../../src/host/detached-task.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { sh } from "../../src/host/shell-quote.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";

const host = new LocalTransport({ hostName: "local", commandTimeoutMs: 10_000 });
let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(() => dir.remove());

/** Waits until the task's state passes `test`. */
async function waitForState(task: string, test: (state: string) => boolean, what: string): Promise<void> {
  await until(async () => test((await detachedStatus(host, task)).state), {
    what: `${what}: ${task}`,
    timeoutMs: 10_000,
  });
}

describe("detached tasks", () => {
  it("outlive the command that started them, and report their exit status and log", async () => {
    const task = join(dir.path, "ok");
    await startDetached(host, task, sh`echo working; sleep 0.5; echo done`);
    expect((await detachedStatus(host, task)).state).toBe("running");
    await waitForState(task, (state) => state === "exited", "the task to exit");
    const status = await detachedStatus(host, task);
    expect(status).toMatchObject({ state: "exited", exitCode: 0, logTail: ["working", "done"] });
  });

  it("reports a failing script's exit code (errexit applies)", async () => {
    const task = join(dir.path, "fail");
    await startDetached(
      host,
      task,
      sh`false
echo never`,
    );
    await waitForState(task, (state) => state === "exited", "the task to exit");
    const status = await detachedStatus(host, task);
    expect(status.exitCode).toBe(1);
    expect(status.logTail).not.toContain("never");
  });

  it("passes secrets without putting them in the script or on a command line", async () => {
    const task = join(dir.path, "secret");
    const token = "hf_canary_0123456789abcdef";
    await startDetached(host, task, sh`ps -eo args > procs; sleep 1; test -n "$HF_TOKEN"`, {
      HF_TOKEN: token,
    });
    await waitForState(task, (state) => state === "exited", "the task to exit");
    expect((await detachedStatus(host, task)).exitCode).toBe(0);
    expect(await readFile(join(task, "run.sh"), "utf8")).not.toContain(token);
    // every process's arguments while the task ran (ps saw itself and the task's bash): none carried the
    // token (a grep in the same pipeline was racy: ps could list the processes before grep had started)
    const procs = await readFile(join(task, "procs"), "utf8");
    expect(procs).toContain("ps -eo args");
    expect(procs).toContain("run.sh");
    expect(procs).not.toContain(token);
    const left = await host.exec(sh`ls -A ${task}`);
    expect(left.stdout).not.toContain(".secret-env");
  });

  it("stop ends the task's whole process group; a killed task is dead, not exited", async () => {
    const task = join(dir.path, "long");
    await startDetached(host, task, sh`sleep 300 & sleep 300; wait`);
    await waitForState(task, (state) => state === "running", "the task to run");
    await stopDetached(host, task);
    await waitForState(task, (state) => state !== "running", "the task to stop running");
    expect((await detachedStatus(host, task)).state).toBe("dead");
    // zombies (this container's PID 1 reaps nothing) do not count: they hold no resources
    const left = await host.exec(
      sh`ps -eo stat=,args= | grep -F ${`${task}/run.sh`} | grep -v grep | grep -v '^Z' || true`,
    );
    expect(left.stdout.trim()).toBe("");
  });

  it("stop ends a task that ignores TERM even when every `ps` is slow (a loaded host), and waits until it is gone", async () => {
    // `ps` 0.3 s a look: the old stop counted fifty looks (20 s), outlasted its command's 10 s limit,
    // and the KILL was never sent
    const slow = join(dir.path, "slow-bin");
    await mkdir(slow, { recursive: true });
    await writeFile(join(slow, "ps"), '#!/bin/sh\nsleep 0.3\nexec /bin/ps "$@"\n', { mode: 0o755 });
    const loaded = new LocalTransport({ hostName: "loaded", commandTimeoutMs: 10_000, extraPath: [slow] });
    const task = join(dir.path, "stubborn");
    await startDetached(loaded, task, sh`trap '' TERM; sleep 300 & sleep 300; wait`);
    await waitForState(task, (state) => state === "running", "the task to run");
    await stopDetached(loaded, task, 1);
    const left = await host.exec(
      sh`ps -eo stat=,args= | grep -F ${`${task}/run.sh`} | grep -v grep | grep -v '^Z' || true`,
    );
    expect(left.stdout.trim()).toBe("");
    expect((await detachedStatus(host, task)).state).toBe("dead");
  });

  it("reads a log whose progress bars redraw one line with \\r (hf, git) as the lines a person saw, each bounded", async () => {
    // An hour of a tqdm bar without a newline (hf's per-file bars close with \r, not \n) is one "line" of
    // megabytes; a failure's reason was that line, and the swap's record could not be saved.
    const task = join(dir.path, "progress");
    await startDetached(
      host,
      task,
      sh`for i in $(seq 1 40000); do printf '\rmodel-00007-of-00019.safetensors: %d%%|####      | 4.2G/11.7G [01:10<02:05, 60.1MB/s]' $((i % 100)); done
printf '\rError: [Errno 28] No space left on device\n' >&2
printf 'a long line: %s\n' "$(head -c 5000 /dev/zero | tr '\\0' z)"
exit 1`,
    );
    await waitForState(task, (state) => state === "exited", "the task to exit");
    const status = await detachedStatus(host, task);
    expect(status.exitCode).toBe(1);
    expect(status.logTail.at(-2)).toBe("Error: [Errno 28] No space left on device");
    expect(status.logTail.at(-3)).toMatch(/^model-00007-of-00019\.safetensors: \d+%\|/);
    expect(status.logTail.at(-1)).toMatch(/^a long line: z+…$/);
    expect(status.logTail.length).toBeLessThanOrEqual(20);
    for (const line of status.logTail) expect(line.length).toBeLessThanOrEqual(1000);
  });

  it("says missing for a task that never started", async () => {
    expect((await detachedStatus(host, join(dir.path, "nothing"))).state).toBe("missing");
  });
});
