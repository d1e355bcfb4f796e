/**
 * SimServer's memory saver (mixed into SimServer, sglang-server.mjs): POST /release_memory_occupation
 * and POST /resume_memory_occupation, as SGLang serves them (python/sglang/srt/entrypoints/http_server.py;
 * the scheduler's side in srt/managers/scheduler_update_weights_mixin.py):
 * - release with no tags frees every tagged region (weights, KV cache, CUDA graphs: srt/constants.py
 *   GPU_MEMORY_ALL_TYPES); what torch_memory_saver does not manage stays: the CUDA context and NCCL's
 *   buffers (the 0.57 + 0.35 GiB the load adds to each GPU's usage). It answers 200
 *   `{"success": true, "message": "Success"}`.
 * - `--enable-weights-cpu-backup` copies the weights to pinned host RAM first (PR #10873), which `free`
 *   then counts as used (sandbox.mjs registerPinnedMemory); without it the resumed weights are not the
 *   model's, and the model answers NaN.
 * - without `--enable-memory-saver` the adapter is a no-op (TorchMemorySaverAdapter.create(enable=False)):
 *   the release answers 200 and frees nothing.
 * - a release while a request runs trips the scheduler's assert ("release_memory_occupation should be
 *   called only when server is idle.") and a resume with nothing released its `offload_tags.remove`
 *   (KeyError: verl's regression test of the same line): an exception in the scheduler process takes the
 *   whole server down (run_scheduler_process: "Scheduler hit an exception", SIGQUIT to the parent).
 * - faults: `resumeMs` (default 80: the resume of a CPU backup, compressed like loadSeconds; 8×H100
 *   measured 4.85 s, torch_memory_saver PR #86), mode `corrupt-backup` (torch_memory_saver#71: the
 *   resumed weights are corrupted, the model answers NaN).
 * Requests while released are not modelled from a source: they wait for the resume, as the vLLM sim's
 * do while it sleeps; the bench's front door holds requests away from a parked unit.
 */
import { clearPinnedMemory, registerPinnedMemory } from "./sandbox.mjs";
import { registerGpuUsage, sglangFaults } from "./sglang-host.mjs";
import { readBody, sendJson } from "./sglang-server-routes.mjs";
import { sleep } from "./sglang-server-util.mjs";

const GiB = 1024 ** 3;
/** Per GPU, what a released server keeps: the CUDA context and NCCL buffers (as the load counts them). */
const KEPT_GIB = 0.57 + 0.35;

/** Memory-saver methods of SimServer. */
export const memoryMethods = {
  /** @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res */
  async releaseRoute(req, res) {
    const body = await readBody(req, res);
    if (body === undefined) return;
    if (this.running + this.queued > 0) {
      this.schedulerCrash(
        [
          "    scheduler.event_loop_overlap()",
          `  File "${this.src("srt/managers/scheduler_update_weights_mixin.py")}", line 132, in release_memory_occupation`,
          "    assert self.is_fully_idle(), \\",
        ],
        "AssertionError: release_memory_occupation should be called only when server is idle.\n",
      );
    }
    this.offloaded = true;
    if (this.args.enable_memory_saver && !this.released) {
      const weightBytes = this.model.weightBytes;
      if (this.args.enable_weights_cpu_backup) registerPinnedMemory(weightBytes);
      else this.weightsLost = true;
      this.released = true;
      this.heldMiB = this.usage.memMiB;
      this.usage.memMiB = Math.round(KEPT_GIB * 1024);
      this.usage.util = 0;
      registerGpuUsage(this.usage);
      this.log(
        `Released memory occupation: weights ${(weightBytes / this.tp / GiB).toFixed(2)} GB per GPU`,
        0,
      );
    }
    sendJson(res, 200, { success: true, message: "Success" });
  },

  /** @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res */
  async resumeRoute(req, res) {
    const body = await readBody(req, res);
    if (body === undefined) return;
    if (!this.offloaded) {
      this.schedulerCrash(
        [
          "    scheduler.event_loop_overlap()",
          `  File "${this.src("srt/managers/scheduler_update_weights_mixin.py")}", line 171, in resume_memory_occupation`,
          "    self.offload_tags.remove(tag)",
        ],
        "KeyError: 'weights'\n",
      );
    }
    this.offloaded = false;
    if (this.released) {
      const faults = sglangFaults(this.port, String(this.args.model_path ?? ""));
      await sleep(faults.resumeMs);
      if (faults.modes.has("corrupt-backup")) this.weightsLost = true;
      clearPinnedMemory();
      this.released = false;
      this.usage.memMiB = this.heldMiB;
      registerGpuUsage(this.usage);
      this.log("Resumed memory occupation", 0);
      for (const wake of this.resumeWaiters.splice(0)) wake();
    }
    sendJson(res, 200, { success: true, message: "Success" });
  },

  /** Resolves once the server holds its memory (at once unless released). */
  async whileReleased() {
    while (this.released) await new Promise((r) => this.resumeWaiters.push(() => r(undefined)));
  },
};
