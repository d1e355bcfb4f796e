/**
 * SimServer's in-place weight update (mixed into SimServer, sglang-server.mjs): POST
 * /update_weights_from_disk, as SGLang serves it —
 * python/sglang/srt/entrypoints/http_server.py (`update_weights_from_disk`: 200 with
 * `{"success", "message", "num_paused_requests"}`, 400 with the same keys when it failed),
 * srt/managers/tokenizer_manager.py (`update_weights_from_disk`: "Start update_weights. Load format=…";
 * `abort_all_requests` aborts the requests in flight; otherwise the model-update writer lock waits for
 * them and holds new ones until the update ends; on success the served model name and the model path
 * become the new path, `_update_model_path_info`; a `weight_version` adds " Weight version updated to …")
 * and srt/model_executor/model_runner.py (`update_weights_from_disk`: "Update engine weights online from
 * disk begin. avail mem=… GB", the weights read from the new directory, "Update weights end.",
 * "Succeeded to update model weights."; an iterator that cannot be built: "Failed to get weights
 * iterator: …"; weights that do not fit the loaded model: "Failed to update weights: ….\nRolling back to
 * original weights.", the original weights read again).
 *
 * What the sim decides, and from where:
 * - "do not fit": another architecture, hidden size, layer, head or vocabulary count, or quantization
 *   (the weights' shapes and dtypes follow from config.json): the default weight loader's assert
 *   "Attempted to load weight (…) into parameter (…)".
 * - the read's cost: `updateSeconds` (a fault setting; by default the load's `loadSeconds` × 3.44 / 239.6,
 *   the engine pause a third party measured with the weights staged in host RAM against read from disk:
 *   modal-projects/stitch#168, GLM-5.2 FP8 tp 4; the bot stages them into the page cache first).
 * - formats the update is known to corrupt silently: MXFP4 MoE (sglang#39472) and FP8 with per-channel or
 *   UE8M0 scales (sglang#30749): it answers success and the model then answers NaN.
 * Not modelled: `abort_all_requests` (the sim answers no request early), `recapture_cuda_graph`.
 */
import { sglangFaults } from "./sglang-host.mjs";
import { readModelDir } from "./sglang-model.mjs";
import { readBody, sendJson } from "./sglang-server-routes.mjs";
import { sleep } from "./sglang-server-util.mjs";

/** The engine pause with the weights in host RAM against read from disk (modal-projects/stitch#168). */
const STAGED_SHARE_OF_LOAD = 3.44 / 239.6;

/** In-place update methods of SimServer. */
export const updateMethods = {
  /** @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res */
  async updateWeightsRoute(req, res) {
    const body = await readBody(req, res);
    if (body === undefined) return;
    const modelPath = body?.model_path;
    if (typeof modelPath !== "string") {
      // FastAPI's validation of UpdateWeightFromDiskReqInput (model_path: str, required)
      sendJson(res, 422, {
        detail: [
          { type: "missing", loc: ["body", "model_path"], msg: "Field required", input: body ?? null },
        ],
      });
      return;
    }
    const loadFormat =
      typeof body.load_format === "string" ? body.load_format : String(this.args.load_format ?? "auto");
    this.log(`Start update_weights. Load format=${loadFormat}`);
    // the writer lock (tokenizer_manager.py: `async with self.model_update_lock.writer_lock`): another update
    // waits for this one's end; requests in flight finish, new ones wait for the update's end
    await this.whileUpdating();
    this.updating = true;
    try {
      while (this.running > 0) await sleep(10);
      this.log(`Update engine weights online from disk begin. avail mem=${this.availGiB().toFixed(2)} GB`, 0);
      const faults = sglangFaults(this.port, modelPath);
      const cost =
        (faults.updateSeconds >= 0 ? faults.updateSeconds : faults.loadSeconds * STAGED_SHARE_OF_LOAD) * 1000;
      let next;
      try {
        next = readModelDir(modelPath);
      } catch (err) {
        sendJson(res, 400, {
          success: false,
          message: `Failed to get weights iterator: ${/** @type {Error} */ (err).message}.`,
          num_paused_requests: 0,
        });
        return;
      }
      await sleep(cost);
      const misfit = misfitOf(this.model, next);
      if (misfit !== undefined) {
        await sleep(cost); // the original weights read again
        sendJson(res, 400, {
          success: false,
          message: `Failed to update weights: ${misfit}.\nRolling back to original weights.`,
          num_paused_requests: 0,
        });
        return;
      }
      this.model = next;
      this.args.model_path = modelPath;
      this.servedModelName = modelPath;
      if (corruptsInPlace(next)) this.weightsLost = true;
      this.log("Update weights end.", 0);
      const version =
        typeof body.weight_version === "string" ? ` Weight version updated to ${body.weight_version}.` : "";
      sendJson(res, 200, {
        success: true,
        message: `Succeeded to update model weights.${version}`,
        num_paused_requests: 0,
      });
    } finally {
      this.updating = false;
      for (const wake of this.updateWaiters.splice(0)) wake();
    }
  },

  /** Resolves once no update holds the writer lock. */
  async whileUpdating() {
    while (this.updating) await new Promise((r) => this.updateWaiters.push(() => r(undefined)));
  },

  /** What a GPU has free beside this server's usage, for the update's log line. */
  availGiB() {
    return Math.max(0, this.gpu.memMiB / 1024 - this.usage.memMiB / 1024);
  },
};

/**
 * Why the new directory's weights do not fit the loaded model, or undefined when they do: the shapes and
 * dtypes of its parameters follow from these config fields.
 * @param {ReturnType<typeof readModelDir>} loaded @param {ReturnType<typeof readModelDir>} next
 */
function misfitOf(loaded, next) {
  const shape = (m) => [m.architecture, m.numLayers, m.numHeads, m.numKvHeads, m.headDim, m.vocabSize];
  const [a, b] = [shape(loaded), shape(next)];
  if (a.some((v, i) => v !== b[i]))
    return `Attempted to load weight (torch.Size([${next.vocabSize}, ${next.numHeads * next.headDim}])) into parameter (torch.Size([${loaded.vocabSize}, ${loaded.numHeads * loaded.headDim}]))`;
  if (loaded.quant.method !== next.quant.method || loaded.quant.algo !== next.quant.algo)
    return `Attempted to load weight of dtype ${next.quant.algo ?? next.quant.method ?? "bfloat16"} into parameter of dtype ${loaded.quant.algo ?? loaded.quant.method ?? "bfloat16"}`;
  return undefined;
}

/**
 * Formats whose in-place update answers success and leaves wrong weights: MXFP4 MoE (sglang#39472) and
 * FP8 with per-channel or UE8M0 scales (sglang#30749: raw scales served).
 * @param {ReturnType<typeof readModelDir>} model
 */
function corruptsInPlace(model) {
  if (model.quant.method === "mxfp4") return true;
  const qc = model.config?.quantization_config ?? model.text?.quantization_config;
  if (qc === undefined || qc === null || typeof qc !== "object") return false;
  const text = JSON.stringify(qc).toLowerCase().replaceAll(" ", "");
  if (text.includes('"scale_fmt":"ue8m0"')) return true;
  // compressed-tensors FP8 with a scale per output channel
  return (
    text.includes('"strategy":"channel"') && text.includes('"type":"float"') && text.includes('"num_bits":8')
  );
}
