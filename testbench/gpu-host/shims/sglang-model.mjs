/**
 * Imitates: what the simulated SGLang engine "knows" about a model and how it "generates":
 * reading a Hugging Face model directory (config.json, hf_quant_config.json,
 * model.safetensors.index.json, *.safetensors), detecting the quantization, estimating the weight
 * size, a toy tokenizer, and deterministic generation (known answers + filler, per-token logprobs),
 * with the broken modes: NaN output ("!!!!", token id 0, null logprobs) and sampling garbage.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** @param {string} path */
function readJson(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}

/**
 * Reads a model directory. Throws { kind, message } errors the server turns into tracebacks.
 * @param {string} dir
 */
export function readModelDir(dir) {
  if (!existsSync(dir) && /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(dir)) {
    const err = new Error(
      `We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.\nCheck your internet connection or see how to run the library in offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'.`,
    );
    /** @type {any} */ (err).kind = "offline";
    throw err;
  }
  if (!existsSync(dir)) {
    const err = new Error(
      `Repo id must be in the form 'repo_name' or 'namespace/repo_name': '${dir}'. Use \`repo_type\` argument if needed.`,
    );
    /** @type {any} */ (err).kind = "missing-dir";
    throw err;
  }
  const configPath = join(dir, "config.json");
  if (!existsSync(configPath)) {
    const err = new Error(
      `${dir} does not appear to have a file named config.json. Checkout 'https://huggingface.co/${dir}/tree/None' for available files.`,
    );
    /** @type {any} */ (err).kind = "no-config";
    throw err;
  }
  let config;
  try {
    config = readJson(configPath);
  } catch (e) {
    const err = new Error(`It looks like the config file at '${configPath}' is not a valid JSON file.`);
    /** @type {any} */ (err).kind = "bad-config";
    /** @type {any} */ (err).cause = e;
    throw err;
  }
  let tokenizerConfig = null;
  const tokenizerConfigPath = join(dir, "tokenizer_config.json");
  if (existsSync(tokenizerConfigPath)) {
    try {
      tokenizerConfig = readJson(tokenizerConfigPath);
    } catch {
      tokenizerConfig = null;
    }
  }
  let hfQuant = null;
  const hfQuantPath = join(dir, "hf_quant_config.json");
  if (existsSync(hfQuantPath)) {
    try {
      hfQuant = readJson(hfQuantPath);
    } catch {
      hfQuant = null;
    }
  }
  const shards = [];
  let shardBytes = 0;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(".safetensors")) continue;
    shards.push(name);
    try {
      shardBytes += statSync(join(dir, name)).size;
    } catch {
      // a file that vanished counts as empty
    }
  }
  shards.sort();
  let indexTotal = null;
  let indexShards = 0;
  const indexPath = join(dir, "model.safetensors.index.json");
  if (existsSync(indexPath)) {
    try {
      const index = readJson(indexPath);
      const total = Number(index?.metadata?.total_size);
      if (Number.isFinite(total) && total > 0) indexTotal = total;
      indexShards = new Set(Object.values(index?.weight_map ?? {})).size;
    } catch {
      // ignore a broken index
    }
  }
  const text =
    config.text_config && typeof config.text_config === "object"
      ? { ...config, ...config.text_config }
      : config;
  const quant = detectQuant(config, hfQuant);
  const paramBytes = estimateWeightBytes(text, quant);
  const weightBytes = indexTotal ?? (shardBytes > 64 * 1024 * 1024 ? shardBytes : paramBytes);
  return {
    dir,
    config,
    text,
    hfQuant,
    quant,
    shards: Math.max(1, shards.length, indexShards),
    weightBytes,
    architecture:
      Array.isArray(config.architectures) && config.architectures[0]
        ? String(config.architectures[0])
        : "LlamaForCausalLM",
    modelType: typeof config.model_type === "string" ? config.model_type : "llama",
    contextLength: Number(text.max_position_embeddings) || 32768,
    vocabSize: Number(text.vocab_size) || 151936,
    numHeads: Number(text.num_attention_heads) || 32,
    numKvHeads: Number(text.num_key_value_heads ?? text.num_attention_heads) || 8,
    numLayers: Number(text.num_hidden_layers) || 32,
    headDim:
      Number(text.head_dim) ||
      Math.round((Number(text.hidden_size) || 4096) / (Number(text.num_attention_heads) || 32)),
    eosTokenId: Array.isArray(config.eos_token_id)
      ? Number(config.eos_token_id[0])
      : Number(config.eos_token_id ?? 2),
    isMoe: Number(text.num_experts ?? text.n_routed_experts ?? text.num_local_experts ?? 0) > 0,
    // transformers' AutoConfig runs the repo's code only when its auto_map names an AutoConfig
    // ("auto_map": {} names none): without trust_remote_code it refuses then
    autoMap: isObject(config.auto_map) && "AutoConfig" in config.auto_map,
    // AutoTokenizer: tokenizer_config.json's auto_map (its AutoTokenizer, or the legacy [slow, fast] list)
    tokenizerAutoMap: tokenizerAutoMapOf(tokenizerConfig),
    tokenizerClass:
      typeof tokenizerConfig?.tokenizer_class === "string" ? tokenizerConfig.tokenizer_class : null,
  };
}

/** @param {unknown} value */
function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Whether tokenizer_config.json names a tokenizer class of the repo's own (transformers'
 * tokenization_auto.py: `auto_map` as a list, or its `AutoTokenizer`).
 * @param {any} tokenizerConfig
 */
function tokenizerAutoMapOf(tokenizerConfig) {
  const autoMap = tokenizerConfig?.auto_map;
  if (Array.isArray(autoMap)) return autoMap.some((v) => v !== null);
  return isObject(autoMap) && autoMap.AutoTokenizer !== undefined && autoMap.AutoTokenizer !== null;
}

/**
 * transformers' error when a tokenizer of the repo's own is loaded without trust_remote_code: with a
 * tokenizer_class (Kimi's TikTokenTokenizer), the class is looked up among transformers' own and not
 * found; without one, resolve_trust_remote_code refuses.
 * @param {{ tokenizerClass: string | null }} model
 * @param {string} modelPath
 */
export function tokenizerError(model, modelPath) {
  if (model.tokenizerClass !== null)
    return `ValueError: Tokenizer class ${model.tokenizerClass} does not exist or is not currently imported.`;
  return `ValueError: The repository ${modelPath} contains custom code which must be executed to correctly load the model. You can inspect the repository content at ${modelPath} .\n You can inspect the repository content at https://hf.co/${modelPath}.\nPlease pass the argument \`trust_remote_code=True\` to allow custom code to be run.`;
}

/**
 * The innermost frames of that error, in transformers' tokenization_auto.py.
 * @param {string} site
 */
export function tokenizerFrames(site) {
  return [
    `  File "${site}/transformers/models/auto/tokenization_auto.py", line 1153, in from_pretrained`,
    "    raise ValueError(",
  ];
}

/**
 * The checkpoint's quantization: { method, algo } with method as SGLang names it
 * ("modelopt_fp4", "modelopt", "fp8", "awq", ...) or null for an unquantized checkpoint.
 * @param {any} config
 * @param {any} hfQuant
 */
export function detectQuant(config, hfQuant) {
  const hfAlgo = hfQuant?.quantization?.quant_algo ?? hfQuant?.quant_algo;
  if (typeof hfAlgo === "string") {
    const algo = hfAlgo.toUpperCase();
    if (algo.includes("FP4")) return { method: "modelopt_fp4", algo };
    if (algo.includes("FP8")) return { method: "modelopt", algo };
    return { method: "modelopt", algo };
  }
  const qc = config?.quantization_config ?? config?.text_config?.quantization_config;
  if (qc && typeof qc === "object") {
    const method = String(qc.quant_method ?? "").toLowerCase();
    const algo = typeof qc.quant_algo === "string" ? qc.quant_algo.toUpperCase() : null;
    if (method === "modelopt" || method === "modelopt_fp4") {
      if (algo?.includes("FP4") || method === "modelopt_fp4")
        return { method: "modelopt_fp4", algo: algo ?? "NVFP4" };
      return { method: "modelopt", algo: algo ?? "FP8" };
    }
    if (method === "compressed-tensors") {
      const fmt = JSON.stringify(qc).toLowerCase();
      if (fmt.includes("nvfp4")) return { method: "compressed-tensors", algo: "NVFP4" };
      return { method: "compressed-tensors", algo: null };
    }
    if (method) return { method, algo };
  }
  return { method: null, algo: null };
}

/** @param {{method:string|null, algo:string|null}} quant */
export function isNvfp4(quant) {
  return quant.method === "modelopt_fp4" || quant.algo === "NVFP4" || (quant.algo ?? "").includes("FP4");
}

/** Bytes per parameter for a quantization (NVFP4: 4 bits + one FP8 scale per 16 values). */
function bytesPerParam(quant) {
  if (isNvfp4(quant) || quant.method === "mxfp4") return 0.5625;
  if (quant.method && /fp8|modelopt|w8a8|int8/.test(quant.method)) return 1;
  if (quant.method && /awq|gptq|marlin|wna16|w4/.test(quant.method)) return 0.5625;
  return 2;
}

/** Rough parameter-count estimate from config.json, times bytes per parameter. */
function estimateWeightBytes(text, quant) {
  const h = Number(text.hidden_size) || 4096;
  const layers = Number(text.num_hidden_layers) || 32;
  const vocab = Number(text.vocab_size) || 151936;
  const inter = Number(text.intermediate_size) || h * 4;
  const experts = Number(text.num_experts ?? text.n_routed_experts ?? text.num_local_experts ?? 0);
  const moeInter = Number(text.moe_intermediate_size) || inter;
  const attn = 4 * h * h;
  const mlp = experts > 0 ? experts * 3 * h * moeInter + 3 * h * moeInter : 3 * h * inter;
  const params = layers * (attn + mlp) + 2 * vocab * h;
  return Math.round(params * bytesPerParam(quant));
}

// ---------------------------------------------------------------------------------------------
// Toy tokenizer

/** FNV-1a 32-bit. @param {string} text */
export function hash32(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Splits text into tokens: words with their leading whitespace, punctuation on its own. */
export function tokenize(text) {
  return String(text).match(/\s*[A-Za-z0-9']+|\s*[^\sA-Za-z0-9']|\s+$/g) ?? [];
}

/** @param {string} token @param {number} vocab */
export function tokenId(token, vocab) {
  if (token === "!") return 0;
  return 1 + (hash32(token) % Math.max(2, vocab - 1));
}

/** Deterministic PRNG (mulberry32). @param {number} seed */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Generation

const KNOWN = [
  { re: /capital (city )?of france/i, chat: "The capital of France is Paris.", raw: " Paris." },
  { re: /capital (city )?of japan/i, chat: "The capital of Japan is Tokyo.", raw: " Tokyo." },
  { re: /capital (city )?of germany/i, chat: "The capital of Germany is Berlin.", raw: " Berlin." },
  { re: /capital (city )?of italy/i, chat: "The capital of Italy is Rome.", raw: " Rome." },
  { re: /capital (city )?of spain/i, chat: "The capital of Spain is Madrid.", raw: " Madrid." },
  { re: /largest planet/i, chat: "The largest planet in our solar system is Jupiter.", raw: " Jupiter." },
  {
    re: /colou?r of the (clear )?sky|sky .*colou?r/i,
    chat: "On a clear day the sky is blue.",
    raw: " blue.",
  },
  { re: /chemical symbol for gold/i, chat: "The chemical symbol for gold is Au.", raw: " Au." },
  {
    re: /who wrote romeo and juliet/i,
    chat: "Romeo and Juliet was written by William Shakespeare.",
    raw: " William Shakespeare.",
  },
  { re: /opposite of hot/i, chat: "The opposite of hot is cold.", raw: " cold." },
  { re: /count from 1 to 5/i, chat: "1, 2, 3, 4, 5", raw: " 1, 2, 3, 4, 5" },
  {
    re: /first letter of the (english )?alphabet/i,
    chat: "The first letter of the English alphabet is A.",
    raw: " A.",
  },
  {
    re: /\b(hello|hi there)\b/i,
    chat: "Hello! How can I help you today?",
    raw: " Hello! How can I help you today?",
  },
];

const FILLER = (
  "the model keeps a steady pace while the server streams each token back to the client and " +
  "a quiet river runs past old stone bridges under a pale morning sky where birds trace slow " +
  "circles above green fields and distant hills hold the last of the winter snow as travellers " +
  "share stories of cities lights harbours markets music and the long roads between them"
).split(" ");

const GARBAGE = ["Ġ", "ĠĠ", "<0x0A>", "âĢ", "ĊĊ", " ;;", " ]]", "ãĤ", " _", "Ã", " \\u", "ï¿½", " ~~", "ÂŃ"];

/** Known answer for a prompt, as { chat, raw } or null. Handles small arithmetic too. */
export function knownAnswer(prompt) {
  const text = String(prompt);
  const arith = /(-?\d+)\s*([+\-*x×])\s*(-?\d+)\s*(=|\?|$)/.exec(text);
  if (arith) {
    const a = Number(arith[1]);
    const b = Number(arith[3]);
    const op = arith[2];
    const result = op === "+" ? a + b : op === "-" ? a - b : a * b;
    const sym = op === "x" || op === "×" ? "*" : op;
    const raw = /=\s*$/.test(text) ? String(result) : ` ${result}`;
    return { chat: `${a} ${sym} ${b} = ${result}.`, raw };
  }
  for (const k of KNOWN) if (k.re.test(text)) return { chat: k.chat, raw: k.raw };
  return null;
}

/**
 * @typedef {{text:string, id:number, logprob:number}} GenToken
 * @typedef {{tokens:GenToken[], finish:{type:string, length?:number, matched?:number|string}}} Generation
 */

/**
 * Plans a whole generation (the server then paces it out).
 * @param {{prompt:string, chat:boolean, maxNewTokens:number, ignoreEos:boolean, stop:string[],
 *   temperature:number, seed:number, mode:"ok"|"nan"|"garbage", vocab:number, eosTokenId:number}} req
 * @returns {Generation}
 */
export function generate(req) {
  const max = Math.max(0, Math.floor(req.maxNewTokens));
  /** @type {GenToken[]} */
  const tokens = [];
  if (max === 0) return { tokens, finish: { type: "length", length: 0 } };
  if (req.mode === "nan") {
    for (let i = 0; i < max; i++) tokens.push({ text: "!", id: 0, logprob: Number.NaN });
    return { tokens, finish: { type: "length", length: max } };
  }
  const rand = prng(hash32(req.prompt) ^ req.seed);
  if (req.mode === "garbage") {
    for (let i = 0; i < max; i++) {
      const text = GARBAGE[Math.floor(rand() * GARBAGE.length)];
      tokens.push({ text, id: 1 + Math.floor(rand() * (req.vocab - 1)), logprob: -(10 + rand() * 2.5) });
    }
    return { tokens, finish: { type: "length", length: max } };
  }
  const answer = knownAnswer(req.prompt);
  const pieces = [];
  if (answer) {
    for (const t of tokenize(req.chat ? answer.chat : answer.raw)) pieces.push({ text: t, confident: true });
  }
  const fillerLen = answer ? 0 : 16 + (hash32(req.prompt) % 48);
  const want = req.ignoreEos ? max : Math.min(max, answer ? pieces.length : fillerLen);
  let w = Math.floor(rand() * FILLER.length);
  let sentence = 0;
  while (pieces.length < want) {
    const word = FILLER[w % FILLER.length];
    w += 1 + Math.floor(rand() * 3);
    const first = sentence === 0;
    pieces.push({
      text: `${first && pieces.length === 0 && req.chat ? "" : " "}${first ? word[0].toUpperCase() + word.slice(1) : word}`,
      confident: false,
    });
    sentence++;
    if (sentence > 6 + Math.floor(rand() * 8) && pieces.length < want) {
      pieces.push({ text: ".", confident: false });
      sentence = 0;
    }
  }
  let text = "";
  for (const p of pieces.slice(0, max)) {
    text += p.text;
    const stopHit = req.stop.find((s) => s !== "" && text.includes(s));
    if (stopHit !== undefined) {
      return { tokens, finish: { type: "stop", matched: stopHit } };
    }
    tokens.push({
      text: p.text,
      id: tokenId(p.text, req.vocab),
      logprob: p.confident ? -(0.0005 + rand() * 0.04) : -(0.05 + rand() * 2.2),
    });
  }
  if (tokens.length >= max) return { tokens, finish: { type: "length", length: max } };
  return { tokens, finish: { type: "stop", matched: req.eosTokenId } };
}
