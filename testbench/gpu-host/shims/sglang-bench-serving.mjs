/**
 * Imitates: `python -m sglang.bench_serving <flags>` — SGLang's online serving benchmark.
 *
 * It really sends the requests (node:http, streaming) to the server named by --host/--port or
 * --base-url, honours --max-concurrency and --request-rate (Poisson arrivals), and prints SGLang's
 * summary ("============ Serving Benchmark Result ============", labels padded with `{:<40}`)
 * from the measured timings; appends the result as one JSON line to --output-file (or to SGLang's
 * default file name). Datasets: random / random-ids (synthesised locally, seeded; the real
 * `random` would download ShareGPT, which a test bench cannot).
 *
 * This module runs the benchmark; its command line is in sglang-bench-args.mjs, its requests in
 * sglang-bench-client.mjs, its metrics, summary and result file in sglang-bench-report.mjs.
 */
import { ArgError, FLAGS, PROG, parse, py, usage } from "./sglang-bench-args.mjs";
import { httpCall, requestsError, sendOne } from "./sglang-bench-client.mjs";
import { calculateMetrics, printSummary, writeResult } from "./sglang-bench-report.mjs";
import { prng } from "./sglang-model.mjs";

/**
 * Random dataset: lengths drawn like numpy randint, prompts synthesised locally.
 * @param {Record<string, any>} args @param {() => number} rand
 */
function sampleRandom(args, rand) {
  const n = args.num_prompts;
  const inLo = Math.max(Math.floor(args.random_input_len * args.random_range_ratio), 1);
  const outLo = Math.floor(args.random_output_len * args.random_range_ratio);
  const randint = (/** @type {number} */ lo, /** @type {number} */ hiIncl) =>
    lo + Math.floor(rand() * (hiIncl - lo + 1));
  const words =
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu".split(
      " ",
    );
  const rows = [];
  for (let i = 0; i < n; i++) {
    const inLen = randint(inLo, args.random_input_len);
    const outLen = Math.max(1, randint(outLo, args.random_output_len));
    let prompt;
    if (args.tokenize_prompt || args.dataset_name === "random-ids") {
      prompt = Array.from({ length: inLen }, () => 1 + Math.floor(rand() * 150000));
      if (!args.tokenize_prompt) prompt = prompt.map((id) => words[id % words.length]).join(" ");
    } else {
      prompt = Array.from({ length: inLen }, () => words[Math.floor(rand() * words.length)]).join(" ");
    }
    rows.push({ prompt, promptLen: inLen, outputLen: outLen });
  }
  return rows;
}

/** @param {() => number} rand @param {number} rate */
function expInterval(rand, rate) {
  return -Math.log(1 - rand()) / rate;
}

/**
 * Runs the benchmark. Returns the process exit code.
 * @param {string[]} argv arguments after `-m sglang.bench_serving`
 */
export async function benchServing(argv) {
  let parsed;
  try {
    parsed = parse(argv);
  } catch (err) {
    if (!(err instanceof ArgError)) throw err;
    process.stderr.write(usage());
    process.stderr.write(`${PROG}: error: ${err.message}\n`);
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(
      `${usage()}\nBenchmark the online serving throughput.\n\noptions:\n  -h, --help            show this help message and exit\n`,
    );
    for (const f of FLAGS)
      process.stdout.write(
        `  ${f.flag}${f.type === "bool" ? "" : ` ${f.dest.toUpperCase()}`}\n                        ${f.help}\n`,
      );
    return 0;
  }
  const args = parsed.v;
  args.lora_request_distribution = "uniform";
  args.lora_zipf_alpha = 1.5;
  process.stdout.write(
    `benchmark_args=Namespace(${Object.entries(args)
      .map(([k, v]) => `${k}=${py(v)}`)
      .join(", ")})\n`,
  );

  if (args.port === null) {
    args.port =
      {
        sglang: 30000,
        "sglang-native": 30000,
        "sglang-oai": 30000,
        lmdeploy: 23333,
        vllm: 8000,
        trt: 8000,
        gserver: 9988,
        truss: 8080,
      }[args.backend] ?? 30000;
  }
  const base = args.base_url ?? `http://${args.host}:${args.port}`;
  const backend = String(args.backend);
  let apiUrl;
  if (backend === "sglang" || backend === "sglang-native") apiUrl = `${base}/generate`;
  else if (["sglang-oai", "vllm", "lmdeploy"].includes(backend)) apiUrl = `${base}/v1/completions`;
  else if (backend.endsWith("-chat")) apiUrl = `${base}/v1/chat/completions`;
  else {
    process.stderr.write(
      `${PROG}: the simulated benchmark supports the sglang, sglang-oai, vllm and *-chat backends, not ${backend}\n`,
    );
    return 1;
  }

  if (args.model === null) {
    const modelUrl = `${base}/v1/models`;
    try {
      const res = await httpCall(modelUrl, {}, null);
      const list = JSON.parse(res.body)?.data ?? [];
      args.model = list.length > 0 ? list[0].id : null;
    } catch (err) {
      process.stdout.write(
        `Failed to fetch model from ${modelUrl}. Error: ${requestsError(modelUrl, err)}\n`,
      );
      process.stdout.write("Please specify the correct host and port using `--host` and `--port`.\n");
      return 1;
    }
  }
  if (args.model === null) {
    process.stdout.write("No model specified or found. Please provide a model using `--model`.\n");
    return 1;
  }
  process.stdout.write(
    `Namespace(${Object.entries(args)
      .map(([k, v]) => `${k}=${py(v)}`)
      .join(", ")})\n\n`,
  );

  if (!String(args.dataset_name).startsWith("random")) {
    process.stderr.write(
      `Traceback (most recent call last):\n  File "${PROG}", line 2208, in <module>\n    run_benchmark(args)\nValueError: The simulated bench_serving only synthesises the random datasets (--dataset-name random|random-ids); '${args.dataset_name}' needs a download.\n`,
    );
    return 1;
  }
  const rand = prng(Number(args.seed) >>> 0);
  const rows = sampleRandom(args, rand);
  process.stdout.write(`#Input tokens: ${rows.reduce((a, r) => a + r.promptLen, 0)}\n`);
  process.stdout.write(`#Output tokens: ${rows.reduce((a, r) => a + r.outputLen, 0)}\n`);
  if (rows.length === 0) {
    process.stderr.write("IndexError: list index out of range\n");
    return 1;
  }
  const model = args.served_model_name ?? args.model;
  let extraBody = {};
  if (args.extra_request_body) {
    try {
      extraBody = JSON.parse(args.extra_request_body);
    } catch (err) {
      process.stderr.write(`json.decoder.JSONDecodeError: ${/** @type {Error} */ (err).message}\n`);
      return 1;
    }
  }

  // Warmup
  const warmups = Math.max(0, Number(args.warmup_requests));
  process.stdout.write(`Starting warmup with ${warmups} sequences...\n`);
  if (warmups > 0) {
    const first = rows[0];
    const outs = await Promise.all(
      Array.from({ length: warmups }, () =>
        sendOne(
          backend,
          apiUrl,
          model,
          first.prompt,
          first.promptLen,
          Math.min(first.outputLen, 32),
          args,
          extraBody,
        ),
      ),
    );
    if (!outs.some((o) => o.success)) {
      process.stderr.write(
        `Traceback (most recent call last):\n  File "<frozen runpy>", line 198, in _run_module_as_main\n  File "<frozen runpy>", line 88, in _run_code\n  File "${PROG}", line 2208, in <module>\n    run_benchmark(args)\n  File "${PROG}", line 1840, in run_benchmark\n    return asyncio.run(\n  File "${PROG}", line 1422, in benchmark\n    raise ValueError(\nValueError: Warmup failed - Please make sure benchmark arguments are correctly specified. Error: ${outs[0].error}`,
      );
      return 1;
    }
  }
  process.stdout.write(`Warmup completed with ${warmups} sequences. Starting main benchmark run...\n`);
  if (args.flush_cache)
    await httpCall(`${base}/flush_cache`, { method: "POST" }, null).catch(() => undefined);

  // Main run
  const limit = args.max_concurrency ?? Number.POSITIVE_INFINITY;
  let active = 0;
  /** @type {(() => void)[]} */
  const waiting = [];
  const acquire = async () => {
    if (active >= limit) await new Promise((r) => waiting.push(() => r(undefined)));
    active++;
  };
  const release = () => {
    active--;
    waiting.shift()?.();
  };
  let done = 0;
  const benchStart = performance.now();
  const tasks = [];
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    tasks.push(
      (async () => {
        await acquire();
        try {
          const res = await sendOne(
            backend,
            apiUrl,
            model,
            r.prompt,
            r.promptLen,
            r.outputLen,
            args,
            extraBody,
          );
          done++;
          return res;
        } finally {
          release();
        }
      })(),
    );
    if (args.request_rate !== Number.POSITIVE_INFINITY && i < rows.length - 1) {
      await new Promise((res) => setTimeout(res, expInterval(rand, args.request_rate) * 1000));
    }
  }
  const outputs = await Promise.all(tasks);
  const duration = (performance.now() - benchStart) / 1000;
  if (!args.disable_tqdm) {
    const rate = done / Math.max(duration, 1e-9);
    process.stderr.write(
      `100%|██████████| ${done}/${rows.length} [00:${String(Math.round(duration)).padStart(2, "0")}<00:00, ${rate.toFixed(2)}it/s]\n`,
    );
  }

  let serverInfo = null;
  let acceptLength = null;
  if (backend.includes("sglang")) {
    try {
      const res = await httpCall(`${base}/get_server_info`, {}, null);
      if (res.status === 200) {
        serverInfo = JSON.parse(res.body);
        const info = serverInfo.decode ? serverInfo.decode[0] : serverInfo;
        acceptLength = info?.internal_states?.[0]?.avg_spec_accept_length ?? null;
      }
    } catch {
      serverInfo = null;
    }
  }

  const { m, outputLens } = calculateMetrics(outputs, rows, duration, benchStart);
  printSummary(backend, args, duration, m, acceptLength);
  writeResult(args, { serverInfo, duration, m, acceptLength, outputs, outputLens });
  return 0;
}
