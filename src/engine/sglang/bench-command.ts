import { type ShellCommand, sh } from "../../host/shell-quote.ts";
import type { BenchOptions } from "../bench-serving.ts";

/** `<venv>/bin/python -m sglang.bench_serving --backend sglang … --disable-tqdm`, every value quoted. */
export function benchCommand(opts: BenchOptions): ShellCommand {
  for (const [name, value] of [
    ["port", opts.port],
    ["concurrency", opts.concurrency],
    ["numPrompts", opts.numPrompts],
    ["inputLen", opts.inputLen],
    ["outputLen", opts.outputLen],
  ] as const) {
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`bench ${name} must be a positive integer, got ${value}`);
  }
  if (!Number.isInteger(opts.seed) || opts.seed < 0)
    throw new Error(`bench seed must be an integer ≥ 0, got ${opts.seed}`);
  const python = `${opts.venv.replace(/\/+$/, "")}/bin/python`;
  return sh`${python} -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port ${opts.port} --model ${opts.model} --dataset-name ${opts.datasetName ?? "random"} --random-input-len ${opts.inputLen} --random-output-len ${opts.outputLen} --random-range-ratio 1 --num-prompts ${opts.numPrompts} --max-concurrency ${opts.concurrency} --seed ${opts.seed} --output-file ${opts.outputFile ?? "/dev/null"} --disable-tqdm`;
}
