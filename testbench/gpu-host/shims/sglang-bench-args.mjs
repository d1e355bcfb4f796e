/**
 * The command line of the simulated `python -m sglang.bench_serving`: SGLang's flag names, defaults and
 * help texts (python/sglang/bench_serving.py), argparse-style parsing and usage, and the Python repr
 * of the `Namespace(...)` it prints.
 */

export const PROG = "bench_serving.py";

const BACKENDS = [
  "sglang",
  "sglang-native",
  "sglang-oai",
  "sglang-oai-chat",
  "vllm",
  "vllm-chat",
  "lmdeploy",
  "lmdeploy-chat",
  "trt",
  "gserver",
  "truss",
];

const DATASETS = [
  "sharegpt",
  "custom",
  "openai",
  "random",
  "random-ids",
  "generated-shared-prefix",
  "mmmu",
  "image",
  "mooncake",
];

/** name, type, default, help, extra */
export const FLAGS = [
  [
    "--backend",
    "str",
    "sglang",
    "Must specify a backend, depending on the LLM Inference Engine.",
    { choices: BACKENDS },
  ],
  ["--base-url", "str", null, "Server or API base url if not using http host and port."],
  ["--host", "str", "0.0.0.0", "Default host is 0.0.0.0."],
  [
    "--port",
    "int",
    null,
    "If not set, the default port is configured according to its default value for different LLM Inference Engines.",
  ],
  ["--dataset-name", "str", "sharegpt", "Name of the dataset to benchmark on.", { choices: DATASETS }],
  ["--dataset-path", "str", "", "Path to the dataset."],
  [
    "--model",
    "str",
    null,
    "Name or path of the model. If not set, the default model will request /v1/models for conf.",
  ],
  [
    "--served-model-name",
    "str",
    null,
    "The name of the model as served by the serving service. If not set, this defaults to the value of --model.",
  ],
  ["--tokenizer", "str", null, "Name or path of the tokenizer. If not set, using the model conf."],
  ["--num-prompts", "int", 1000, "Number of prompts to process. Default is 1000."],
  [
    "--sharegpt-output-len",
    "int",
    null,
    "Output length for each request. Overrides the output length from the ShareGPT dataset.",
  ],
  ["--sharegpt-context-len", "int", null, "The context length of the model for the ShareGPT dataset."],
  ["--random-input-len", "int", 1024, "Number of input tokens per request, used only for random dataset."],
  ["--random-output-len", "int", 1024, "Number of output tokens per request, used only for random dataset."],
  [
    "--random-range-ratio",
    "float",
    0.0,
    "Range of sampled ratio of input/output length, used only for random dataset.",
  ],
  [
    "--request-rate",
    "float",
    Number.POSITIVE_INFINITY,
    "Number of requests per second. If this is inf, then all the requests are sent at time 0.",
  ],
  ["--max-concurrency", "int", null, "Maximum number of concurrent requests."],
  ["--output-file", "str", null, "Output JSONL file name."],
  ["--output-details", "bool", false, "Output details of benchmarking."],
  ["--disable-tqdm", "bool", false, "Specify to disable tqdm progress bar."],
  ["--disable-stream", "bool", false, "Disable streaming mode."],
  ["--return-logprob", "bool", false, "Return logprob."],
  ["--seed", "int", 1, "The random seed."],
  ["--disable-ignore-eos", "bool", false, "Disable ignoring EOS."],
  ["--extra-request-body", "str", null, "Append given JSON object to the request payload."],
  ["--apply-chat-template", "bool", false, "Apply chat template"],
  ["--profile", "bool", false, "Use Torch Profiler."],
  ["--lora-name", "list", null, "The names of LoRA adapters."],
  ["--prompt-suffix", "str", "", "Suffix applied to the end of all user prompts."],
  ["--pd-separated", "bool", false, "Benchmark PD disaggregation server"],
  ["--flush-cache", "bool", false, "Flush the cache before running the benchmark"],
  ["--warmup-requests", "int", 1, "Number of warmup requests to run before the benchmark"],
  ["--tokenize-prompt", "bool", false, "Use integer ids instead of string for inputs."],
  ["--tag", "str", null, "The tag to be dumped to output."],
].map(([flag, type, def, help, extra]) => ({
  flag: /** @type {string} */ (flag),
  dest: /** @type {string} */ (flag).slice(2).replaceAll("-", "_"),
  type: /** @type {string} */ (type),
  default: def,
  help: /** @type {string} */ (help),
  choices: /** @type {any} */ (extra)?.choices ?? null,
}));

export class ArgError extends Error {}

export function usage() {
  const parts = [
    "[-h]",
    ...FLAGS.map((f) =>
      f.type === "bool"
        ? `[${f.flag}]`
        : `[${f.flag} ${f.choices ? `{${f.choices.join(",")}}` : f.dest.toUpperCase()}]`,
    ),
  ];
  const prefix = `usage: ${PROG} `;
  const lines = [];
  let line = prefix;
  for (const p of parts) {
    if (line.length + p.length + 1 > 78 && line.trim() !== prefix.trim()) {
      lines.push(line.trimEnd());
      line = " ".repeat(prefix.length);
    }
    line += `${p} `;
  }
  lines.push(line.trimEnd());
  return `${lines.join("\n")}\n`;
}

/** @param {string[]} argv */
export function parse(argv) {
  return parseArgs(FLAGS, argv);
}

/**
 * argparse's parsing of a flat flag table (Python 3.12): `--flag value`, `--flag=value`, unique prefixes,
 * store_true booleans, int/float/list types and choices, errors in argparse's words. `underscores`: read
 * `_` in a flag's name as `-`, as vLLM's FlexibleArgumentParser does.
 * @param {{ flag: string, dest: string, type: string, default: unknown, choices?: string[] | null }[]} flags
 * @param {string[]} argv
 * @param {{ underscores?: boolean }} [options]
 */
export function parseArgs(flags, argv, options = {}) {
  /** @type {Record<string, any>} */
  const v = {};
  for (const f of flags) v[f.dest] = f.default;
  const unknown = [];
  const all = flags.map((f) => f.flag);
  const isOpt = (/** @type {string} */ a) => a.startsWith("-") && !/^-\.?\d/.test(a);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return { help: true, v };
    if (!isOpt(arg)) {
      unknown.push(arg);
      continue;
    }
    let name = arg;
    let inline = null;
    const eq = arg.indexOf("=");
    if (eq > 0) {
      name = arg.slice(0, eq);
      inline = arg.slice(eq + 1);
    }
    if (options.underscores) name = name.replaceAll("_", "-");
    let spec = flags.find((f) => f.flag === name);
    if (!spec) {
      const cands = all.filter((f) => f.startsWith(name));
      if (cands.length > 1) throw new ArgError(`ambiguous option: ${name} could match ${cands.join(", ")}`);
      if (cands.length === 1) spec = flags.find((f) => f.flag === cands[0]);
    }
    if (!spec) {
      unknown.push(arg);
      continue;
    }
    if (spec.type === "bool") {
      if (inline !== null) throw new ArgError(`argument ${spec.flag}: ignored explicit argument '${inline}'`);
      v[spec.dest] = true;
      continue;
    }
    if (spec.type === "list") {
      const items = [];
      while (i + 1 < argv.length && !isOpt(argv[i + 1])) items.push(argv[++i]);
      v[spec.dest] = items;
      continue;
    }
    let raw = inline;
    if (raw === null) {
      if (i + 1 >= argv.length || isOpt(argv[i + 1]))
        throw new ArgError(`argument ${spec.flag}: expected one argument`);
      raw = argv[++i];
    }
    let val = raw;
    if (spec.type === "int") {
      if (!/^\s*[+-]?\d+\s*$/.test(raw))
        throw new ArgError(`argument ${spec.flag}: invalid int value: '${raw}'`);
      val = Number.parseInt(raw, 10);
    } else if (spec.type === "float") {
      const t = raw.trim().toLowerCase();
      val = t === "inf" || t === "infinity" ? Number.POSITIVE_INFINITY : Number(t);
      if (t === "" || Number.isNaN(val))
        throw new ArgError(`argument ${spec.flag}: invalid float value: '${raw}'`);
    }
    if (spec.choices && !spec.choices.includes(val)) {
      throw new ArgError(
        `argument ${spec.flag}: invalid choice: '${val}' (choose from ${spec.choices.map((c) => `'${c}'`).join(", ")})`,
      );
    }
    v[spec.dest] = val;
  }
  if (unknown.length > 0) throw new ArgError(`unrecognized arguments: ${unknown.join(" ")}`);
  return { help: false, v };
}

/** Python repr for Namespace(...). */
export function py(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") {
    if (v === Number.POSITIVE_INFINITY) return "inf";
    return String(v);
  }
  if (Array.isArray(v)) return `[${v.map(py).join(", ")}]`;
  return `'${String(v).replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}
