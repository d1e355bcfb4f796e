import { describe, expect, it } from "vitest";
import { downloadStep } from "../../../jobs/swap/stages/download.ts";
import { taskDir, verificationFiles } from "../../../jobs/swap/stages/download-task.ts";
import type { Fake } from "./fake-stage-context.ts";
import { countingStarts, eventsOf, plannedSwap, SERVING_CHANGES } from "./stage-fixtures.ts";

const dirOf = (fake: Fake) => taskDir("/srv/models", fake.swap.record.id, "download");

/** `du -sb --apparent-size <modelDir>` answers these bytes from now on. */
function onDisk(fake: Fake, bytes: number): void {
  fake.host.on(/^du -sb --apparent-size /, { stdout: `${bytes}\n` });
}

describe("downloadStep", () => {
  it("starts the download once: size list and checksums first, the secrets passed aside, a checkpoint after", async () => {
    const fake = await plannedSwap({ settings: { downloadSecrets: { HF_TOKEN: "hf_sEcReT0123456789" } } });
    const { ctx, starts } = countingStarts(fake);
    const { model, plan } = fake.swap.record;
    const dir = dirOf(fake);
    const checkpoints = fake.checkpoints();

    expect(await downloadStep(ctx)).toBeUndefined();

    const files = verificationFiles(model!);
    expect(fake.host.commands.filter((c) => /cat > /.test(c.text))).toEqual([
      { text: `mkdir -p ${dir} && cat > ${dir}/sizes`, stdin: files.sizes },
      { text: `cat > ${dir}/sha256sums`, stdin: files.sums },
    ]);
    expect(files.sizes.trim().split("\n")).toEqual(model!.files.map((f) => `${f.size} ${f.path}`));
    expect(starts).toHaveLength(1);
    expect(starts[0]!.dir).toBe(dir);
    expect(starts[0]!.script).toContain(
      `hf download ${model!.repo} --revision ${model!.sha} --local-dir ${plan!.modelDir} --max-workers 8 ${model!.files.map((f) => `--include ${f.path}`).join(" ")}\n`,
    );
    expect(fake.host.started.get(dir)?.secrets).toEqual({ HF_TOKEN: "hf_sEcReT0123456789" });
    // the token is never on a command line or in the script
    expect(JSON.stringify(fake.host.commands)).not.toContain("hf_sEcReT");
    expect(starts[0]!.script).not.toContain("hf_sEcReT");

    expect(fake.swap.record.tasks.download).toEqual({
      dir,
      startedAt: "2026-12-01T12:00:00.000Z",
      attempts: 1,
    });
    expect(fake.swap.record.stages.download.state).toBe("running");
    expect(fake.checkpoints()).toBe(checkpoints + 1);

    // the next looks find it running and start nothing
    onDisk(fake, 1e9);
    await downloadStep(ctx);
    await downloadStep(ctx);
    expect(starts).toHaveLength(1);
    expect(fake.host.ran(/\/sizes$/)).toHaveLength(1);
    expect(fake.swap.record.tasks.download?.attempts).toBe(1);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("attaches to a download found running after a crash, never starting a second one", async () => {
    const fake = await plannedSwap();
    const { ctx, starts } = countingStarts(fake);
    const dir = dirOf(fake);
    // the worker died after starting the task and before recording it
    fake.host.status.set(dir, { state: "running", exitCode: undefined, logTail: [] });
    fake.clock.time += 30_000;
    onDisk(fake, 50e9);

    expect(await downloadStep(ctx)).toBeUndefined();

    expect(starts).toEqual([]);
    expect(fake.host.ran(/cat > /)).toEqual([]);
    expect(fake.swap.record.tasks.download).toEqual({
      dir,
      startedAt: "2026-12-01T12:00:30.000Z",
      attempts: 1,
    });
    expect(fake.swap.record.stages.download).toMatchObject({ state: "running", detail: "22 % of 223 GB" });
  });

  it("reports progress from the bytes on disk: percent, rate and ETA", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    const total = fake.swap.record.model!.totalBytes;
    const modelDir = fake.swap.record.plan!.modelDir;
    onDisk(fake, 0);
    await downloadStep(ctx);
    expect(fake.swap.record.stages.download.detail).toBe("0 % of 223 GB");

    fake.clock.time += 60_000;
    onDisk(fake, total / 2);
    await downloadStep(ctx);
    // 111.5 GB in 60 s
    expect(fake.swap.record.download).toMatchObject({ bytes: total / 2, at: "2026-12-01T12:01:00.000Z" });
    expect(fake.swap.record.download?.rate).toBeCloseTo(total / 2 / 60, 0);
    expect(fake.swap.record.stages.download.detail).toMatch(/^50 % of 223 GB · 1858\.\d MB\/s · ETA 1 min$/);

    fake.clock.time += 100_000;
    onDisk(fake, total / 2 + 20e9);
    await downloadStep(ctx);
    expect(fake.swap.record.stages.download.detail).toMatch(
      /^58 % of 223 GB · 200\.0 MB\/s · ETA 7 min 40 s$/,
    );
    expect(fake.host.ran(/^du -sb --apparent-size /).at(-1)).toBe(
      `du -sb --apparent-size ${modelDir} 2>/dev/null | cut -f1`,
    );
  });

  it("ends done with a `downloaded` event when the task exits 0 (its sizes and checksums verified)", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    const { model } = fake.swap.record;
    await downloadStep(ctx);
    fake.clock.time += 10 * 60_000;
    fake.host.status.set(dirOf(fake), {
      state: "exited",
      exitCode: 0,
      logTail: ["modelswap: verified 17 files"],
    });

    expect(await downloadStep(ctx)).toBeUndefined();

    expect(fake.swap.record.stages.download).toMatchObject({
      state: "done",
      detail: "223 GB verified in 10 min",
    });
    expect(eventsOf(fake, "downloaded")).toEqual([
      {
        type: "downloaded",
        files: model!.files.length,
        bytes: model!.totalBytes,
        at: "2026-12-01T12:10:00.000Z",
      },
    ]);
    // a done download is not looked at again
    const ran = fake.host.commands.length;
    expect(await downloadStep(ctx)).toBeUndefined();
    expect(fake.host.commands).toHaveLength(ran);
    expect(eventsOf(fake, "downloaded")).toHaveLength(1);
  });

  it("restarts a dead download, the same task keeping its complete files, up to settings.downloadRetries times", async () => {
    const fake = await plannedSwap({ settings: { downloadRetries: 2 } });
    const { ctx, starts } = countingStarts(fake);
    const dir = dirOf(fake);
    const modelDir = fake.swap.record.plan!.modelDir;
    await downloadStep(ctx);

    const died = [
      "Fetching 17 files:  41%|████      | 7/17",
      "ConnectionResetError: [Errno 104] Connection reset by peer",
    ];
    fake.host.status.set(dir, { state: "dead", exitCode: undefined, logTail: died });
    const checkpoints = fake.checkpoints();
    expect(await downloadStep(ctx)).toBeUndefined();
    expect(eventsOf(fake, "download-retrying")).toEqual([
      { type: "download-retrying", attempt: 2, state: "dead", log: died, at: expect.any(String) },
    ]);
    expect(fake.swap.record.tasks.download?.attempts).toBe(2);
    expect(fake.checkpoints()).toBe(checkpoints + 1);

    const mismatch = ["modelswap: size mismatch for model-00003-of-00011.safetensors: expected 4, found 3"];
    fake.host.status.set(dir, { state: "exited", exitCode: 3, logTail: mismatch });
    expect(await downloadStep(ctx)).toBeUndefined();
    expect(eventsOf(fake, "download-retrying").at(-1)).toMatchObject({
      attempt: 3,
      state: "exited",
      exitCode: 3,
      log: mismatch,
    });
    expect(fake.swap.record.tasks.download?.attempts).toBe(3);

    // each restart is the same task: same directory, same script, which removes only orphaned partial files
    expect(starts).toHaveLength(3);
    expect(new Set(starts.map((s) => s.dir))).toEqual(new Set([dir]));
    expect(new Set(starts.map((s) => s.script)).size).toBe(1);
    expect(starts[0]!.script).toContain(
      `find ${modelDir}/.cache/huggingface/download -name '*.incomplete' -delete`,
    );
    // complete files are kept: the one rm removes a file that failed its size or sha256 check
    expect(starts[0]!.script.match(/\brm\b.*/g)).toEqual([
      'rm -f -- "$1" ".cache/huggingface/download/$1.metadata"; }',
    ]);
    expect(fake.host.ran(/\brm -r|\brm -f .*safetensors/)).toEqual([]);
    // the size list is written once, at the first start
    expect(fake.host.ran(/\/sizes$/)).toHaveLength(1);
    expect(fake.swap.record.stages.download.state).toBe("running");
  });

  it("fails, nothing touched, once the retries are spent: a `download-failed` event with the log", async () => {
    const fake = await plannedSwap({ settings: { downloadRetries: 1 } });
    const { ctx, starts } = countingStarts(fake);
    const dir = dirOf(fake);
    await downloadStep(ctx);
    const log = ["huggingface_hub.errors.HfHubHTTPError: 503 Server Error: Service Unavailable"];
    fake.host.status.set(dir, { state: "exited", exitCode: 1, logTail: log });
    expect(await downloadStep(ctx)).toBeUndefined();
    fake.host.status.set(dir, { state: "exited", exitCode: 1, logTail: log });

    expect(await downloadStep(ctx)).toEqual({
      fail: "the download failed (huggingface_hub.errors.HfHubHTTPError: 503 Server Error: Service Unavailable)",
      touched: false,
    });

    expect(starts).toHaveLength(2);
    expect(fake.swap.record.stages.download).toMatchObject({
      state: "failed",
      detail: "failed after 2 attempts",
    });
    expect(eventsOf(fake, "download-retrying")).toHaveLength(1);
    expect(eventsOf(fake, "download-failed")).toEqual([
      { type: "download-failed", log, at: expect.any(String) },
    ]);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("says 'no output' when a failed download left no log", async () => {
    const fake = await plannedSwap({ settings: { downloadRetries: 0 } });
    const { ctx } = countingStarts(fake);
    await downloadStep(ctx);
    fake.host.status.set(dirOf(fake), { state: "dead", exitCode: undefined, logTail: [] });
    expect(await downloadStep(ctx)).toEqual({ fail: "the download failed (no output)", touched: false });
  });

  it("starts a download whose task directory vanished again, with the size list its verification reads", async () => {
    const fake = await plannedSwap();
    const { ctx, starts } = countingStarts(fake);
    const dir = dirOf(fake);
    await downloadStep(ctx);
    // someone cleaned up .modelswap/tasks on the host: the task, its size list and checksums are gone
    fake.host.status.set(dir, { state: "missing", exitCode: undefined, logTail: [] });

    expect(await downloadStep(ctx)).toBeUndefined();

    expect(starts).toHaveLength(2);
    // the script verifies against `${dir}/sizes` (`done < sizes` fails the task when it is missing)
    expect(starts[1]!.script).toContain(`done < ${dir}/sizes`);
    expect(fake.host.ran(new RegExp(`cat > ${dir}/sizes$`))).toHaveLength(2);
  });
});
