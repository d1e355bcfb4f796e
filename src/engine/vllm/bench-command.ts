import { type ShellCommand, sh } from "../../host/shell-quote.ts";
import type { BenchOptions } from "../bench-serving.ts";

/** `<venv>/bin/vllm bench serve --backend vllm … --disable-tqdm` against the server on `port`, every value quoted. */
export function vllmBenchCommand(opts: BenchOptions): ShellCommand {
  const vllm = `${opts.venv.replace(/\/+$/, "")}/bin/vllm`;
  const served = opts.servedModelName === undefined ? sh`` : sh`--served-model-name ${opts.servedModelName}`;
  return sh`${vllm} bench serve --backend vllm --base-url ${`http://127.0.0.1:${opts.port}`} --model ${opts.model} ${served} --dataset-name ${opts.datasetName ?? "random"} --random-input-len ${opts.inputLen} --random-output-len ${opts.outputLen} --random-range-ratio 1 --num-prompts ${opts.numPrompts} --max-concurrency ${opts.concurrency} --seed ${opts.seed} --disable-tqdm`;
}
