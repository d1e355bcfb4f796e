/**
 * Imitates: `python -m sglang.bench_serving <flags>` — SGLang's online serving benchmark.
 *
 * It really sends the requests (node:http, streaming) to the server named by --host/--port or
 * --base-url, honours --max-concurrency and --request-rate (Poisson arrivals), and prints SGLang's
 * summary ("============ Serving Benchmark Result ============", labels padded with `{:<40}`)
 * from the measured timings; appends the result as one JSON line to --output-file (or to SGLang's
 * default file name). Datasets: random / random-ids (synthesised locally, seeded; the real
 * `random` would download ShareGPT, which a test bench cannot).
 */
import { appendFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { prng, tokenize } from "./sglang-model.mjs";

const PROG = "bench_serving.py";
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
const FLAGS = [
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

class ArgError extends Error {}

function usage() {
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
function parse(argv) {
  /** @type {Record<string, any>} */
  const v = {};
  for (const f of FLAGS) v[f.dest] = f.default;
  const unknown = [];
  const all = FLAGS.map((f) => f.flag);
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
    let spec = FLAGS.find((f) => f.flag === name);
    if (!spec) {
      const cands = all.filter((f) => f.startsWith(name));
      if (cands.length > 1) throw new ArgError(`ambiguous option: ${name} could match ${cands.join(", ")}`);
      if (cands.length === 1) spec = FLAGS.find((f) => f.flag === cands[0]);
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
function py(v) {
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

/** Python str() for `{:<10}` fields. */
function pyStr(v) {
  if (v === null || v === undefined) return "None";
  if (typeof v === "number") {
    if (v === Number.POSITIVE_INFINITY) return "inf";
    if (Number.isNaN(v)) return "nan";
    return Number.isInteger(v) && !Object.is(v, -0) ? String(v) : String(v);
  }
  return String(v);
}

/** @param {number} v */
function f2(v) {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  return v.toFixed(2);
}

/** `"{:<40} {:<10}".format(label, value)` */
function row(label, value) {
  return `${label.padEnd(40)} ${value.padEnd(10)}`;
}

/** `"{s:{c}^{n}}".format(s=..., n=50, c=...)` */
function center(s, c) {
  const extra = Math.max(0, 50 - s.length);
  const left = Math.floor(extra / 2);
  return c.repeat(left) + s + c.repeat(extra - left);
}

// numpy-like statistics ------------------------------------------------------------------------
/** @param {number[]} xs */
function mean(xs) {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}
/** @param {number[]} xs @param {number} q */
function percentile(xs, q) {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (q / 100) * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}
/** @param {number[]} xs */
function std(xs) {
  if (xs.length === 0) return Number.NaN;
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
}
/** numpy treats `xs or 0` as [0] when empty. @param {number[]} xs */
const orZero = (xs) => (xs.length === 0 ? [0] : xs);

// HTTP ------------------------------------------------------------------------------------------
/**
 * @param {string} url
 * @param {{method?:string, body?:unknown}} opts
 * @param {((line:string)=>void) | null} onLine
 * @returns {Promise<{status:number, reason:string, body:string}>}
 */
function httpCall(url, opts, onLine) {
  const u = new URL(url);
  const hostname = u.hostname === "0.0.0.0" || u.hostname === "localhost" ? "127.0.0.1" : u.hostname;
  const payload = opts.body === undefined ? null : JSON.stringify(opts.body);
  const headers = { "content-type": "application/json" };
  if (process.env.OPENAI_API_KEY) headers.authorization = `Bearer ${process.env.OPENAI_API_KEY}`;
  if (payload !== null) headers["content-length"] = String(Buffer.byteLength(payload));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        hostname,
        port: u.port || 80,
        path: `${u.pathname}${u.search}`,
        method: opts.method ?? "GET",
        headers,
        agent: false,
      },
      (res) => {
        let body = "";
        let pending = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          body += chunk;
          if (onLine) {
            pending += chunk;
            let idx = pending.indexOf("\n");
            while (idx >= 0) {
              const line = pending.slice(0, idx).trim();
              pending = pending.slice(idx + 1);
              if (line !== "") onLine(line);
              idx = pending.indexOf("\n");
            }
          }
        });
        res.on("end", () => {
          if (onLine && pending.trim() !== "") onLine(pending.trim());
          resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? "", body });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (payload !== null) req.write(payload);
    req.end();
  });
}

/** @param {string} url @param {any} err */
function requestsError(url, err) {
  const u = new URL(url);
  const code =
    err?.code === "ECONNREFUSED" ? "[Errno 111] Connection refused" : (err?.message ?? String(err));
  return `HTTPConnectionPool(host='${u.hostname}', port=${u.port || 80}): Max retries exceeded with url: ${u.pathname} (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1e5d90>: Failed to establish a new connection: ${code}'))`;
}

/** @param {string} url @param {any} err */
function aiohttpError(url, err) {
  const u = new URL(url);
  const host = u.hostname;
  const port = u.port || 80;
  if (err?.code === "ECONNREFUSED") {
    return `aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host ${host}:${port} ssl:default [Connect call failed ('${host === "0.0.0.0" ? "127.0.0.1" : host}', ${port})]`;
  }
  return `aiohttp.client_exceptions.ClientOSError: ${err?.message ?? String(err)}`;
}

/**
 * One benchmark request; mirrors bench_serving's request functions.
 * @returns {Promise<{success:boolean, generated:string, latency:number, ttft:number, itl:number[], outputLen:number, promptLen:number, error:string, start:number, tokenTimes:number[]}>}
 */
async function sendOne(backend, apiUrl, model, prompt, promptLen, outputLen, args, extraBody) {
  const stream = !args.disable_stream;
  const ignoreEos = !args.disable_ignore_eos;
  const out = {
    success: false,
    generated: "",
    latency: 0,
    ttft: 0,
    itl: /** @type {number[]} */ ([]),
    outputLen: 0,
    promptLen,
    error: "",
    start: performance.now(),
    tokenTimes: /** @type {number[]} */ ([]),
  };
  const st = performance.now();
  let mostRecent = st;
  let lastOutputLen = 0;
  let body;
  const native = backend === "sglang" || backend === "sglang-native";
  const chat = backend.endsWith("-chat");
  if (native) {
    body = {
      [Array.isArray(prompt) ? "input_ids" : "text"]: prompt,
      sampling_params: { temperature: 0.0, max_new_tokens: outputLen, ignore_eos: ignoreEos },
      stream,
      lora_path: null,
      return_logprob: args.return_logprob,
      logprob_start_len: -1,
      ...extraBody,
    };
  } else if (chat) {
    body = {
      model,
      messages: [{ role: "user", content: prompt }],
      temperature: 0.0,
      max_tokens: outputLen,
      stream,
      ignore_eos: ignoreEos,
      ...extraBody,
    };
  } else {
    body = {
      model,
      prompt,
      temperature: 0.0,
      best_of: 1,
      max_tokens: outputLen,
      stream,
      ignore_eos: ignoreEos,
      ...extraBody,
    };
  }
  let outLen = outputLen;
  try {
    const res = await httpCall(
      apiUrl,
      { method: "POST", body },
      stream
        ? (line) => {
            const chunk = line.startsWith("data: ")
              ? line.slice(6)
              : line.startsWith("data:")
                ? line.slice(5)
                : line;
            if (chunk === "[DONE]") return;
            let data;
            try {
              data = JSON.parse(chunk);
            } catch {
              return;
            }
            const ts = performance.now();
            if (native) {
              if (!data.text) return;
              out.generated = data.text;
              outLen = data.meta_info?.completion_tokens ?? outLen;
              if (out.ttft === 0) {
                out.ttft = (ts - st) / 1000;
              } else {
                const n = outLen - lastOutputLen;
                if (n === 0) return;
                const adjust = (ts - mostRecent) / 1000 / n;
                for (let k = 0; k < n; k++) out.itl.push(adjust);
              }
              for (let k = lastOutputLen; k < outLen; k++) out.tokenTimes.push(ts);
              mostRecent = ts;
              lastOutputLen = outLen;
              out.latency = (ts - st) / 1000;
              return;
            }
            const content = chat ? data.choices?.[0]?.delta?.content : data.choices?.[0]?.text;
            if (content) {
              if (out.ttft === 0) out.ttft = (ts - st) / 1000;
              else out.itl.push((ts - mostRecent) / 1000);
              out.tokenTimes.push(ts);
              mostRecent = ts;
              out.generated += content;
            }
            if (data.usage?.completion_tokens) outLen = data.usage.completion_tokens;
            out.latency = (ts - st) / 1000;
          }
        : null,
    );
    if (res.status === 200) {
      if (!stream) {
        const json = JSON.parse(res.body);
        const end = performance.now();
        out.latency = (end - st) / 1000;
        out.ttft = out.latency;
        if (native) {
          out.generated = json.text;
          outLen = json.meta_info?.completion_tokens ?? outLen;
        } else {
          out.generated = chat ? json.choices[0].message.content : json.choices[0].text;
          outLen = json.usage?.completion_tokens ?? outLen;
        }
        for (let k = 0; k < outLen; k++) out.tokenTimes.push(end);
      } else if (out.latency === 0) {
        out.latency = (performance.now() - st) / 1000;
      }
      out.success = true;
      out.outputLen = outLen;
    } else {
      out.error = res.reason || "";
    }
  } catch (err) {
    out.error = `Traceback (most recent call last):\n  File "${PROG}", line 380, in async_request_sglang_generate\n    async with session.post(\n${aiohttpError(apiUrl, err)}\n`;
  }
  return out;
}

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

  // Metrics (calculate_metrics)
  const outputLens = [];
  const retokenized = [];
  let totalInput = 0;
  let completed = 0;
  const itls = [];
  const tpots = [];
  const ttfts = [];
  const e2e = [];
  const tokenTimes = [];
  const spans = [];
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i];
    if (o.success) {
      outputLens.push(o.outputLen);
      retokenized.push(tokenize(o.generated).length);
      totalInput += rows[i].promptLen;
      if (o.outputLen > 1) tpots.push((o.latency - o.ttft) / (o.outputLen - 1));
      itls.push(...o.itl);
      ttfts.push(o.ttft);
      e2e.push(o.latency);
      tokenTimes.push(...o.tokenTimes);
      spans.push([o.start, o.start + o.latency * 1000]);
      completed++;
    } else {
      outputLens.push(0);
      retokenized.push(0);
    }
  }
  if (completed === 0) {
    process.stderr.write(
      `${PROG}:1: UserWarning: All requests failed. This is likely due to a misconfiguration on the benchmark arguments.\n`,
    );
  }
  const totalOutput = outputLens.reduce((a, b) => a + b, 0);
  const totalRetok = retokenized.reduce((a, b) => a + b, 0);
  // Peak output throughput: tokens per 1-second bucket since the start.
  const buckets = new Map();
  for (const t of tokenTimes) {
    const b = Math.floor((t - benchStart) / 1000);
    buckets.set(b, (buckets.get(b) ?? 0) + 1);
  }
  const peakTps = buckets.size === 0 ? 0 : Math.max(...buckets.values());
  const events = spans
    .flatMap(([s, e]) => [
      [s, 1],
      [e, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cur = 0;
  let peakConc = 0;
  for (const [, d] of events) {
    cur += d;
    peakConc = Math.max(peakConc, cur);
  }
  const m = {
    completed,
    total_input: totalInput,
    total_output: totalOutput,
    total_output_retokenized: totalRetok,
    request_throughput: completed / duration,
    input_throughput: totalInput / duration,
    output_throughput: totalOutput / duration,
    total_throughput: (totalInput + totalOutput) / duration,
    mean_ttft_ms: mean(orZero(ttfts)) * 1000,
    median_ttft_ms: percentile(orZero(ttfts), 50) * 1000,
    std_ttft_ms: std(orZero(ttfts)) * 1000,
    p99_ttft_ms: percentile(orZero(ttfts), 99) * 1000,
    mean_tpot_ms: mean(orZero(tpots)) * 1000,
    median_tpot_ms: percentile(orZero(tpots), 50) * 1000,
    std_tpot_ms: std(orZero(tpots)) * 1000,
    p99_tpot_ms: percentile(orZero(tpots), 99) * 1000,
    mean_itl_ms: mean(orZero(itls)) * 1000,
    median_itl_ms: percentile(orZero(itls), 50) * 1000,
    std_itl_ms: std(orZero(itls)) * 1000,
    p95_itl_ms: percentile(orZero(itls), 95) * 1000,
    p99_itl_ms: percentile(orZero(itls), 99) * 1000,
    max_itl_ms: Math.max(...orZero(itls)) * 1000,
    mean_e2e_latency_ms: mean(e2e) * 1000,
    median_e2e_latency_ms: percentile(e2e, 50) * 1000,
    std_e2e_latency_ms: std(e2e) * 1000,
    p90_e2e_latency_ms: percentile(e2e, 90) * 1000,
    p99_e2e_latency_ms: percentile(e2e, 99) * 1000,
    concurrency: e2e.reduce((a, b) => a + b, 0) / duration,
    max_output_tokens_per_s: peakTps,
    max_concurrent_requests: peakConc,
  };

  const lines = [
    "",
    center(" Serving Benchmark Result ", "="),
    row("Backend:", backend),
    row("Traffic request rate:", pyStr(args.request_rate)),
    row("Max request concurrency:", args.max_concurrency ? String(args.max_concurrency) : "not set"),
    row("Successful requests:", String(m.completed)),
    row("Benchmark duration (s):", f2(duration)),
    row("Total input tokens:", String(m.total_input)),
    row("Total input text tokens:", String(m.total_input)),
    row("Total generated tokens:", String(m.total_output)),
    row("Total generated tokens (retokenized):", String(m.total_output_retokenized)),
    row("Request throughput (req/s):", f2(m.request_throughput)),
    row("Input token throughput (tok/s):", f2(m.input_throughput)),
    row("Output token throughput (tok/s):", f2(m.output_throughput)),
    row("Peak output token throughput (tok/s):", f2(m.max_output_tokens_per_s)),
    row("Peak concurrent requests:", String(m.max_concurrent_requests)),
    row("Total token throughput (tok/s):", f2(m.total_throughput)),
    row("Concurrency:", f2(m.concurrency)),
    ...(acceptLength ? [row("Accept length:", f2(acceptLength))] : []),
    center("End-to-End Latency", "-"),
    row("Mean E2E Latency (ms):", f2(m.mean_e2e_latency_ms)),
    row("Median E2E Latency (ms):", f2(m.median_e2e_latency_ms)),
    row("P90 E2E Latency (ms):", f2(m.p90_e2e_latency_ms)),
    row("P99 E2E Latency (ms):", f2(m.p99_e2e_latency_ms)),
    center("Time to First Token", "-"),
    row("Mean TTFT (ms):", f2(m.mean_ttft_ms)),
    row("Median TTFT (ms):", f2(m.median_ttft_ms)),
    row("P99 TTFT (ms):", f2(m.p99_ttft_ms)),
    center("Time per Output Token (excl. 1st token)", "-"),
    row("Mean TPOT (ms):", f2(m.mean_tpot_ms)),
    row("Median TPOT (ms):", f2(m.median_tpot_ms)),
    row("P99 TPOT (ms):", f2(m.p99_tpot_ms)),
    center("Inter-Token Latency", "-"),
    row("Mean ITL (ms):", f2(m.mean_itl_ms)),
    row("Median ITL (ms):", f2(m.median_itl_ms)),
    row("P95 ITL (ms):", f2(m.p95_itl_ms)),
    row("P99 ITL (ms):", f2(m.p99_itl_ms)),
    row("Max ITL (ms):", f2(m.max_itl_ms)),
    "=".repeat(50),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);

  const result = {
    tag: args.tag,
    backend: args.backend,
    dataset_name: args.dataset_name,
    request_rate: args.request_rate,
    max_concurrency: args.max_concurrency,
    sharegpt_output_len: args.sharegpt_output_len,
    random_input_len: args.random_input_len,
    random_output_len: args.random_output_len,
    random_range_ratio: args.random_range_ratio,
    server_info: serverInfo,
    duration,
    completed: m.completed,
    total_input_tokens: m.total_input,
    total_input_text_tokens: m.total_input,
    total_input_vision_tokens: 0,
    total_output_tokens: m.total_output,
    total_output_tokens_retokenized: m.total_output_retokenized,
    request_throughput: m.request_throughput,
    input_throughput: m.input_throughput,
    output_throughput: m.output_throughput,
    total_throughput: m.total_throughput,
    mean_e2e_latency_ms: m.mean_e2e_latency_ms,
    median_e2e_latency_ms: m.median_e2e_latency_ms,
    std_e2e_latency_ms: m.std_e2e_latency_ms,
    p90_e2e_latency_ms: m.p90_e2e_latency_ms,
    p99_e2e_latency_ms: m.p99_e2e_latency_ms,
    mean_ttft_ms: m.mean_ttft_ms,
    median_ttft_ms: m.median_ttft_ms,
    std_ttft_ms: m.std_ttft_ms,
    p99_ttft_ms: m.p99_ttft_ms,
    mean_tpot_ms: m.mean_tpot_ms,
    median_tpot_ms: m.median_tpot_ms,
    std_tpot_ms: m.std_tpot_ms,
    p99_tpot_ms: m.p99_tpot_ms,
    mean_itl_ms: m.mean_itl_ms,
    median_itl_ms: m.median_itl_ms,
    std_itl_ms: m.std_itl_ms,
    p95_itl_ms: m.p95_itl_ms,
    p99_itl_ms: m.p99_itl_ms,
    concurrency: m.concurrency,
    accept_length: acceptLength,
    max_output_tokens_per_s: m.max_output_tokens_per_s,
    max_concurrent_requests: m.max_concurrent_requests,
  };
  let fileName = args.output_file;
  if (!fileName) {
    const d = new Date();
    const mmdd = `${String(d.getMonth() + 1).padStart(2, "0")}${String(d.getDate()).padStart(2, "0")}`;
    fileName = `${args.backend}_${mmdd}_${args.num_prompts}_${args.random_input_len}_${args.random_output_len}.jsonl`;
  }
  const details = {
    input_lens: outputs.map((o) => o.promptLen),
    output_lens: outputLens,
    ttfts: outputs.map((o) => o.ttft),
    itls: outputs.map((o) => o.itl),
    generated_texts: outputs.map((o) => o.generated),
    errors: outputs.map((o) => o.error),
  };
  appendFileSync(fileName, `${pyJson(args.output_details ? { ...result, ...details } : result)}\n`);
  return 0;
}

/** Python json.dumps (default separators, ensure_ascii, NaN/Infinity literals). @param {unknown} v */
function pyJson(v) {
  if (v === null || v === undefined) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "NaN";
    if (!Number.isFinite(v)) return v > 0 ? "Infinity" : "-Infinity";
    return String(v);
  }
  if (typeof v === "string") {
    return JSON.stringify(v).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
  }
  if (Array.isArray(v)) return `[${v.map(pyJson).join(", ")}]`;
  if (typeof v === "object") {
    return `{${Object.entries(v)
      .map(([k, x]) => `${pyJson(k)}: ${pyJson(x)}`)
      .join(", ")}}`;
  }
  return "null";
}
