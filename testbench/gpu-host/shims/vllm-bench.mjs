/**
 * Imitates: `vllm bench serve --backend vllm --base-url … --model … --dataset-name random
 * --random-input-len N --random-output-len M --num-prompts K --max-concurrency C` — vLLM 0.18's online
 * serving benchmark (vllm/benchmarks/serve.py), against the simulated server or any OpenAI-compatible one.
 *
 * It really measures: one streaming request per prompt through the SGLang sim's client (sendOne of
 * sglang-bench-client.mjs — the same aiohttp-style streaming request and TTFT/ITL timing — with vLLM's
 * extra body: `stream_options.include_usage`, so output lengths come from the usage chunk as vLLM's
 * client counts them), --max-concurrency as a semaphore, --request-rate as Poisson arrivals. Before the
 * run, serve.py's "Starting initial single prompt test run..." with the ready check (--ready-check-timeout-sec,
 * retrying until the endpoint answers), optional warmups, then the summary in serve.py's order and format:
 * the "{s:{c}^{n}}" rules 50 wide, `"{:<40} {:<10}"` rows (counts) and `"{:<40} {:<10.2f}"` rows (rates and
 * times), then for each of --percentile-metrics (default ttft,tpot,itl) its section with Mean, Median and
 * the P<n> of --metric-percentiles (default 99). --save-result writes the result JSON like json.dump.
 * Statistics are numpy's (mean, median, linear percentiles: sglang-bench-report.mjs).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ArgError, parseArgs, py } from "./sglang-bench-args.mjs";
import { httpCall, requestsError, sendOne } from "./sglang-bench-client.mjs";
import { calculateMetrics, mean, percentile, pyJson, std } from "./sglang-bench-report.mjs";
import { prng } from "./sglang-model.mjs";

const PROG = "vllm bench serve";
const USAGE = "usage: vllm bench serve [options]\n";

const BACKENDS = [
  "vllm",
  "openai",
  "openai-chat",
  "openai-audio",
  "openai-embeddings",
  "sglang",
  "tgi",
  "lmdeploy",
  "deepspeed-mii",
  "tensorrt-llm",
  "scalellm",
];
const DATASETS = [
  "sharegpt",
  "burstgpt",
  "sonnet",
  "random",
  "random-mm",
  "random-rerank",
  "hf",
  "custom",
  "prefix_repetition",
  "spec_bench",
];

/** name, type, default, choices */
const FLAGS = [
  ["--backend", "str", "vllm", BACKENDS],
  ["--base-url", "str", null],
  ["--host", "str", "127.0.0.1"],
  ["--port", "int", 8000],
  ["--endpoint", "str", "/v1/completions"],
  ["--dataset-name", "str", "random", DATASETS],
  ["--dataset-path", "str", null],
  ["--model", "str", null],
  ["--served-model-name", "str", null],
  ["--tokenizer", "str", null],
  ["--num-prompts", "int", 1000],
  ["--random-input-len", "int", 1024],
  ["--random-output-len", "int", 128],
  ["--random-range-ratio", "float", 0.0],
  ["--random-prefix-len", "int", 0],
  ["--request-rate", "float", Number.POSITIVE_INFINITY],
  ["--burstiness", "float", 1.0],
  ["--max-concurrency", "int", null],
  ["--seed", "int", 0],
  ["--trust-remote-code", "bool", false],
  ["--disable-tqdm", "bool", false],
  ["--ignore-eos", "bool", false],
  ["--logprobs", "int", null],
  ["--num-warmups", "int", 0],
  ["--ready-check-timeout-sec", "int", 600],
  ["--save-result", "bool", false],
  ["--save-detailed", "bool", false],
  ["--result-dir", "str", null],
  ["--result-filename", "str", null],
  ["--label", "str", null],
  ["--percentile-metrics", "str", "ttft,tpot,itl"],
  ["--metric-percentiles", "str", "99"],
  ["--temperature", "float", null],
].map(([flag, type, def, choices]) => ({
  flag: /** @type {string} */ (flag),
  dest: /** @type {string} */ (flag).slice(2).replaceAll("-", "_"),
  type: /** @type {string} */ (type),
  default: def,
  choices: /** @type {string[] | undefined} */ (choices),
}));

/** argparse-style parsing (FlexibleArgumentParser: `_` in names read as `-`). @param {string[]} argv */
function parse(argv) {
  return parseArgs(FLAGS, argv, { underscores: true });
}

/** `"{:<40} {:<10}"` / `"{:<40} {:<10.2f}"` */
const row = (/** @type {string} */ label, /** @type {string} */ value) =>
  `${label.padEnd(40)} ${value.padEnd(10)}`;
const f2 = (/** @type {number} */ x) => (Number.isNaN(x) ? "nan" : x.toFixed(2));
/** `"{s:{c}^{n}}".format(s=…, n=50, c=…)` */
function center(s, c) {
  const extra = Math.max(0, 50 - s.length);
  return c.repeat(Math.floor(extra / 2)) + s + c.repeat(extra - Math.floor(extra / 2));
}

/**
 * Runs `vllm bench serve`. Returns the exit code.
 * @param {string[]} argv arguments after `bench serve`
 */
export async function vllmBenchServe(argv) {
  let parsed;
  try {
    parsed = parse(argv);
  } catch (err) {
    if (!(err instanceof ArgError)) throw err;
    const msg = err.message;
    // unrecognized arguments go up to the top parser, like `vllm serve`'s
    process.stderr.write(
      msg.startsWith("unrecognized")
        ? `usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\nvllm: error: ${msg}\n`
        : `${USAGE}${PROG}: error: ${msg}\n`,
    );
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(`${USAGE}\noptions:\n  -h, --help            show this help message and exit\n`);
    for (const f of FLAGS)
      process.stdout.write(`  ${f.flag}${f.type === "bool" ? "" : ` ${f.dest.toUpperCase()}`}\n`);
    return 0;
  }
  const a = parsed.v;
  process.stdout.write(
    `Namespace(subparser='bench', bench_type='serve', ${Object.entries(a)
      .map(([k, v]) => `${k}=${py(v)}`)
      .join(", ")})\n`,
  );
  if (a.dataset_name !== "random") {
    process.stderr.write(
      `Traceback (most recent call last):\nValueError: The simulated vllm bench serve only synthesises --dataset-name random; '${a.dataset_name}' needs a download.\n`,
    );
    return 1;
  }
  const base = a.base_url ?? `http://${a.host}:${a.port}`;
  const apiUrl = `${base}${a.endpoint}`;
  let modelId = a.model;
  if (modelId === null) {
    try {
      const res = await httpCall(`${base}/v1/models`, {}, null);
      modelId = JSON.parse(res.body)?.data?.[0]?.id ?? null;
    } catch (err) {
      process.stderr.write(
        `Traceback (most recent call last):\n  File "vllm/benchmarks/serve.py", line 1271, in main_async\n    model_id = get_first_model_from_server(base_url, headers)\nrequests.exceptions.ConnectionError: ${requestsError(`${base}/v1/models`, err)}\n`,
      );
      return 1;
    }
  }
  const modelName = a.served_model_name ?? modelId;
  const chat = a.backend === "openai-chat" || String(a.endpoint).endsWith("/chat/completions");

  // random dataset (vllm/benchmarks/datasets.py RandomDataset): lengths in [len·(1−r), len·(1+r)]
  const rand = prng(Number(a.seed) >>> 0);
  const words =
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split(
      " ",
    );
  const lo = (/** @type {number} */ n) => Math.max(1, Math.floor(n * (1 - a.random_range_ratio)));
  const hi = (/** @type {number} */ n) => Math.max(1, Math.ceil(n * (1 + a.random_range_ratio)));
  const draw = (/** @type {number} */ l, /** @type {number} */ h) => l + Math.floor(rand() * (h - l + 1));
  const rows = Array.from({ length: a.num_prompts }, () => {
    const inLen = draw(lo(a.random_input_len), hi(a.random_input_len));
    const outLen = draw(lo(a.random_output_len), hi(a.random_output_len));
    return {
      prompt: Array.from({ length: inLen }, () => words[Math.floor(rand() * words.length)]).join(" "),
      promptLen: inLen,
      outputLen: outLen,
    };
  });
  if (rows.length === 0) {
    process.stderr.write("IndexError: list index out of range\n");
    return 1;
  }
  const extraBody = {
    repetition_penalty: 1.0,
    stream_options: { include_usage: true },
    ...(a.logprobs !== null ? { logprobs: a.logprobs } : {}),
    ...(a.temperature !== null ? { temperature: a.temperature } : {}),
  };
  const backend = chat ? "openai-chat" : a.backend;
  const clientArgs = { disable_stream: false, disable_ignore_eos: !a.ignore_eos, return_logprob: false };
  const send = (/** @type {{prompt:string,promptLen:number,outputLen:number}} */ r) =>
    sendOne(backend, apiUrl, modelName, r.prompt, r.promptLen, r.outputLen, clientArgs, extraBody).then(
      (o) => {
        if (!o.success && o.error) o.error = vllmError(apiUrl, o.error);
        return o;
      },
    );

  process.stdout.write("Starting initial single prompt test run...\n");
  if (a.ready_check_timeout_sec > 0) {
    const deadline = Date.now() + a.ready_check_timeout_sec * 1000;
    let test = await send(rows[0]);
    while (!test.success && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      test = await send(rows[0]);
    }
    if (!test.success) {
      process.stderr.write(
        `Traceback (most recent call last):\n  File "vllm/benchmarks/serve.py", line 640, in benchmark\n    raise ValueError(\nValueError: Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: ${test.error}\n`,
      );
      return 1;
    }
    process.stdout.write("Initial test run completed.\n");
  } else {
    process.stdout.write("Skipping endpoint ready check.\n");
  }
  if (a.num_warmups > 0) {
    process.stdout.write(`Warming up with ${a.num_warmups} requests...\n`);
    await Promise.all(Array.from({ length: a.num_warmups }, () => send(rows[0])));
    process.stdout.write("Warmup run completed.\n");
  }
  process.stdout.write("Starting main benchmark run...\n");
  process.stdout.write(`Traffic request rate: ${py(a.request_rate)}\n`);
  process.stdout.write(
    `Burstiness factor: ${a.burstiness.toFixed(1)} (${a.burstiness === 1 ? "Poisson process" : "Gamma distribution"})\n`,
  );
  process.stdout.write(`Maximum request concurrency: ${py(a.max_concurrency)}\n`);

  const limit = a.max_concurrency ?? Number.POSITIVE_INFINITY;
  let active = 0;
  /** @type {(() => void)[]} */
  const queue = [];
  const start = performance.now();
  const tasks = [];
  for (let i = 0; i < rows.length; i++) {
    tasks.push(
      (async () => {
        if (active >= limit) await new Promise((r) => queue.push(() => r(undefined)));
        active++;
        try {
          return await send(rows[i]);
        } finally {
          active--;
          queue.shift()?.();
        }
      })(),
    );
    if (a.request_rate !== Number.POSITIVE_INFINITY && i < rows.length - 1)
      await new Promise((r) => setTimeout(r, (-Math.log(1 - rand()) / a.request_rate) * 1000));
  }
  const outputs = await Promise.all(tasks);
  const duration = (performance.now() - start) / 1000;
  if (!a.disable_tqdm)
    process.stderr.write(
      `100%|██████████| ${rows.length}/${rows.length} [00:${String(Math.round(duration)).padStart(2, "0")}<00:00, ${(rows.length / duration).toFixed(2)}it/s]\n`,
    );

  const { m } = calculateMetrics(outputs, rows, duration, start);
  const ok = outputs.filter((o) => o.success);
  const series = {
    ttft: ok.map((o) => o.ttft),
    tpot: ok.filter((o) => o.outputLen > 1).map((o) => (o.latency - o.ttft) / (o.outputLen - 1)),
    itl: ok.flatMap((o) => o.itl),
    e2el: ok.map((o) => o.latency),
  };
  const orZero = (/** @type {number[]} */ xs) => (xs.length === 0 ? [0] : xs);
  const lines = [center(" Serving Benchmark Result ", "=")];
  lines.push(row("Successful requests:", String(m.completed)));
  lines.push(row("Failed requests:", String(outputs.length - m.completed)));
  if (a.max_concurrency !== null) lines.push(row("Maximum request concurrency:", String(a.max_concurrency)));
  if (a.request_rate !== Number.POSITIVE_INFINITY)
    lines.push(row("Request rate configured (RPS):", f2(a.request_rate)));
  lines.push(row("Benchmark duration (s):", f2(duration)));
  lines.push(row("Total input tokens:", String(m.total_input)));
  lines.push(row("Total generated tokens:", String(m.total_output)));
  lines.push(row("Request throughput (req/s):", f2(m.request_throughput)));
  lines.push(row("Output token throughput (tok/s):", f2(m.output_throughput)));
  lines.push(row("Peak output token throughput (tok/s):", f2(m.max_output_tokens_per_s)));
  lines.push(row("Peak concurrent requests:", f2(m.max_concurrent_requests)));
  lines.push(row("Total token throughput (tok/s):", f2(m.total_throughput)));
  /** @type {Record<string, unknown>} */
  const result = {
    date: new Date().toISOString().replace(/[-:]/g, "").slice(0, 15),
    backend: a.backend,
    label: a.label,
    model_id: modelId,
    tokenizer_id: a.tokenizer ?? modelId,
    num_prompts: a.num_prompts,
    request_rate: a.request_rate,
    burstiness: a.burstiness,
    max_concurrency: a.max_concurrency,
    duration,
    completed: m.completed,
    failed: outputs.length - m.completed,
    total_input_tokens: m.total_input,
    total_output_tokens: m.total_output,
    request_throughput: m.request_throughput,
    request_goodput: null,
    output_throughput: m.output_throughput,
    total_token_throughput: m.total_throughput,
    max_output_tokens_per_s: m.max_output_tokens_per_s,
    max_concurrent_requests: m.max_concurrent_requests,
  };
  const headers = {
    ttft: ["TTFT", "Time to First Token"],
    tpot: ["TPOT", "Time per Output Token (excl. 1st token)"],
    itl: ["ITL", "Inter-token Latency"],
    e2el: ["E2EL", "End-to-end Latency"],
  };
  const pcts = String(a.metric_percentiles)
    .split(",")
    .map((p) => Number(p.trim()));
  for (const key of String(a.percentile_metrics)
    .split(",")
    .map((s) => s.trim())) {
    const h = headers[/** @type {keyof typeof headers} */ (key)];
    if (!h) continue;
    const xs = orZero(series[/** @type {keyof typeof series} */ (key)]);
    lines.push(center(h[1], "-"));
    lines.push(row(`Mean ${h[0]} (ms):`, f2(mean(xs) * 1000)));
    lines.push(row(`Median ${h[0]} (ms):`, f2(percentile(xs, 50) * 1000)));
    result[`mean_${key}_ms`] = mean(xs) * 1000;
    result[`median_${key}_ms`] = percentile(xs, 50) * 1000;
    result[`std_${key}_ms`] = std(xs) * 1000;
    for (const p of pcts) {
      const word = Number.isInteger(p) ? String(p) : String(p);
      lines.push(row(`P${word} ${h[0]} (ms):`, f2(percentile(xs, p) * 1000)));
      result[`p${word}_${key}_ms`] = percentile(xs, p) * 1000;
    }
  }
  lines.push("=".repeat(50));
  process.stdout.write(`${lines.join("\n")}\n`);

  if (a.save_result) {
    const now = new Date();
    const p = (/** @type {number} */ n) => String(n).padStart(2, "0");
    const stamp = `${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}-${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}`;
    const baseModel = String(modelId).split("/").at(-1);
    const conc = a.max_concurrency !== null ? `-concurrency${a.max_concurrency}` : "";
    let file =
      a.result_filename ??
      `${a.label ?? a.backend}-${py(a.request_rate)}qps${conc}-${baseModel}-${stamp}.json`;
    if (a.result_dir) file = join(a.result_dir, file);
    writeFileSync(file, pyJson(result));
  }
  return 0;
}

/** The error text vLLM's request function records (traceback.format_exc of the aiohttp error). */
function vllmError(_apiUrl, sglangError) {
  const last = String(sglangError).trim().split("\n").at(-1) ?? "";
  return `Traceback (most recent call last):\n  File "vllm/benchmarks/lib/endpoint_request_func.py", line 196, in async_request_openai_completions\n    async with session.post(\n${last}\n`;
}
