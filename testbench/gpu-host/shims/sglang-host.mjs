/**
 * Imitates: nothing by itself — the view of the simulated GPU host that the simulated SGLang
 * (`python -m sglang.launch_server`, `python -m sglang.bench_serving`, `python -c ...`) needs:
 * the sandbox root, faults, config, the GPU set (compute capability, memory), the installed
 * engine (the `__editable__.sglang-*.pth` marker `pip install -e` leaves in the venv, see
 * venv.mjs), and the GPU-usage registry that the simulated `nvidia-smi` reads.
 *
 * It prefers the shared `sandbox.mjs` beside it (written by the gpu-host helper) and falls back to
 * reading the same files directly when that module or one of its functions is missing:
 *   <sandbox>/state/config.json   { "gpus": "<set name>", "sglang": { loadSeconds, ... } }
 *   <sandbox>/state/faults.json   { "sglang": "nan" | [...] | { mode, loadSeconds, ports: {...} } }
 *   <sandbox>/state/gpu-usage/<pid>.json  { gpus, memMiB, util, processName }
 * GPU numbers in the usage registry are physical (nvidia-smi's); a process's own (logical) numbers
 * follow its CUDA_VISIBLE_DEVICES (visibleGpus).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { importableSglang } from "./venv.mjs";

/** @type {Record<string, unknown> | null} */
let shared = null;
try {
  shared = await import("./sandbox.mjs");
} catch {
  shared = null;
}

/** @type {Record<string, unknown> | null} */
let gpuSets = null;
try {
  gpuSets = await import("./gpu-sets.mjs");
} catch {
  gpuSets = null;
}

/** @param {string} name */
function sharedFn(name) {
  const fn = shared?.[name];
  return typeof fn === "function" ? fn : null;
}

/** Sandbox root (env MODELSWAP_SANDBOX), or null when the shims run outside a sandbox. */
export function sandboxRoot() {
  const fn = sharedFn("sandboxRoot");
  if (fn) {
    try {
      const root = fn();
      if (typeof root === "string" && root !== "") return root;
    } catch {
      // fall through to the environment
    }
  }
  const root = process.env.MODELSWAP_SANDBOX;
  return root && root !== "" ? root : null;
}

/** @param {string} path */
function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
}

/** @returns {Record<string, any>} */
export function readConfig() {
  const fn = sharedFn("readConfig");
  if (fn) {
    try {
      const cfg = fn();
      if (cfg && typeof cfg === "object") return cfg;
    } catch {
      // fall back to the file
    }
  }
  const root = sandboxRoot();
  if (!root) return {};
  return readJson(join(root, "state", "config.json")) ?? {};
}

/** @returns {Record<string, any>} */
export function readFaults() {
  const fn = sharedFn("readFaults");
  if (fn) {
    try {
      const faults = fn();
      if (faults && typeof faults === "object") return faults;
    } catch {
      // fall back to the file
    }
  }
  const root = sandboxRoot();
  if (!root) return {};
  return readJson(join(root, "state", "faults.json")) ?? {};
}

/** Records one invocation for tests (no-op without the shared module). */
export function recordCall(cmd, argv) {
  const fn = sharedFn("recordCall");
  if (!fn || !sandboxRoot()) return;
  try {
    fn(cmd, argv);
  } catch {
    // recording must never break the command itself
  }
}

/** The venv of the host: `sandboxPaths().venvDir` (<sandbox>/opt/venvs/sglang), or null. */
export function venvDir() {
  const root = sandboxRoot();
  if (!root) return null;
  const fn = sharedFn("sandboxPaths");
  if (fn) {
    try {
      return fn(root).venvDir;
    } catch {
      // fall through
    }
  }
  return join(root, "opt", "venvs", "sglang");
}

/** Path of the venv interpreter on the host (<venv>/bin/python), for messages. */
export function venvPython() {
  const dir = venvDir();
  return dir ? join(dir, "bin", "python") : "python";
}

/** site-packages of the venv, or null outside a sandbox. */
export function sitePackagesDir() {
  const dir = venvDir();
  return dir ? join(dir, "lib", "python3.12", "site-packages") : null;
}

/**
 * The installed (importable) SGLang, as Python finds it: the newest
 * `<site-packages>/__editable__.sglang-*.pth` marker names the project directory (what
 * `pip install -e <dir>` was given) whose `sglang/` package is imported. Null when SGLang is not
 * installed or its directory is gone.
 * @returns {{ projectDir: string; packageDir: string; version: string | null } | null}
 */
export function installedSglang() {
  const root = sandboxRoot();
  return root ? importableSglang(root) : null;
}

/** The project directory of the installed SGLang (holding `sglang/`), or null when not installed. */
export function engineDir() {
  return installedSglang()?.projectDir ?? null;
}

/** `__version__` of the installed SGLang (`<project>/sglang/version.py`), or null. */
export function engineVersion() {
  return installedSglang()?.version ?? null;
}

/**
 * GPU models the simulated host knows (by a substring of the set name). Memory is what the real
 * `nvidia-smi --query-gpu=memory.total` reports in MiB.
 */
const GPU_MODELS = [
  { match: "rtx-pro-6000", name: "NVIDIA RTX PRO 6000 Blackwell Server Edition", cc: 12.0, memMiB: 97887 },
  { match: "rtx-5090", name: "NVIDIA GeForce RTX 5090", cc: 12.0, memMiB: 32607 },
  { match: "b300", name: "NVIDIA B300", cc: 10.3, memMiB: 275040 },
  { match: "gb200", name: "NVIDIA GB200", cc: 10.0, memMiB: 189471 },
  { match: "b200", name: "NVIDIA B200", cc: 10.0, memMiB: 183359 },
  { match: "h200", name: "NVIDIA H200", cc: 9.0, memMiB: 143771 },
  { match: "h100", name: "NVIDIA H100 80GB HBM3", cc: 9.0, memMiB: 81559 },
  { match: "a100", name: "NVIDIA A100-SXM4-80GB", cc: 8.0, memMiB: 81920 },
  { match: "l40s", name: "NVIDIA L40S", cc: 8.9, memMiB: 46068 },
];

/**
 * The GPU set of the host: { setName, count, name, cc, memMiB }.
 * Uses the shared module's description when it offers one, else parses the set name
 * ("8x-rtx-pro-6000-blackwell", "h200-1gpu", "8x-b200").
 */
export function gpuSet() {
  const cfg = readConfig();
  const setName = typeof cfg.gpus === "string" && cfg.gpus !== "" ? cfg.gpus : "h200-1gpu";
  const fn = gpuSets?.gpuSet;
  if (typeof fn === "function") {
    try {
      const parsed = fromSharedDescription(setName, fn(setName));
      if (parsed) return parsed;
    } catch {
      // unknown to the shared table: fall back to parsing the name
    }
  }
  return parseSetName(setName);
}

/** @param {string} setName @param {any} info */
function fromSharedDescription(setName, info) {
  const gpus = Array.isArray(info) ? info : Array.isArray(info?.gpus) ? info.gpus : null;
  if (!gpus || gpus.length === 0) return null;
  const first = gpus[0];
  const cc = Number.parseFloat(String(first.computeCap ?? first.compute_cap ?? first.cc ?? ""));
  const total = Number(first.memoryTotalMiB ?? first.memoryMiB ?? first.memMiB ?? Number.NaN);
  if (!Number.isFinite(cc) || !Number.isFinite(total)) return null;
  const memMiB = total - (Number(first.reservedMiB) || 0);
  return { setName, count: gpus.length, name: String(first.name ?? "NVIDIA GPU"), cc, memMiB };
}

/** @param {string} setName */
export function parseSetName(setName) {
  const lower = setName.toLowerCase();
  const model = GPU_MODELS.find((m) => lower.includes(m.match)) ?? GPU_MODELS.find((m) => m.match === "h200");
  const countMatch = /^(\d+)\s*x/.exec(lower) ?? /(\d+)\s*-?gpus?\b/.exec(lower);
  const count = countMatch ? Math.max(1, Number.parseInt(countMatch[1], 10)) : 1;
  return { setName, count, name: model.name, cc: model.cc, memMiB: model.memMiB };
}

/**
 * UUIDs of the host's GPUs by physical index (`nvidia-smi -L`), from the shared GPU-set table;
 * empty when the set is unknown to it (then no `GPU-…` entry of CUDA_VISIBLE_DEVICES matches).
 * @returns {string[]}
 */
export function gpuUuids() {
  const cfg = readConfig();
  const setName = typeof cfg.gpus === "string" && cfg.gpus !== "" ? cfg.gpus : "h200-1gpu";
  const fn = gpuSets?.gpuSet;
  if (typeof fn !== "function") return [];
  try {
    const info = fn(setName);
    const gpus = Array.isArray(info) ? info : Array.isArray(info?.gpus) ? info.gpus : [];
    return gpus.map((g) => String(g?.uuid ?? ""));
  } catch {
    return [];
  }
}

/**
 * The leading integer of an entry, like the C strtoul() the CUDA runtime parses entries with (so
 * "1gpu2" is 1); -1 when the entry does not start with digits.
 * @param {string} text
 */
function leadingOrdinal(text) {
  const m = /^\+?(\d+)/.exec(text);
  return m ? Number.parseInt(m[1], 10) : -1;
}

/**
 * The physical GPUs a CUDA process sees, in the order it numbers them 0..n-1, given the value of
 * CUDA_VISIBLE_DEVICES (undefined: not set). As the CUDA runtime does it ("only the devices whose
 * index is present in the sequence are visible to CUDA applications and they are enumerated in the
 * order of the sequence. If one of the indices is invalid, only the devices whose index precedes the
 * invalid index are visible", CUDA C++ Programming Guide, CUDA Environment Variables), with the
 * details PyTorch reproduces in torch/cuda/__init__.py (_parse_visible_devices,
 * _transform_uuid_to_ordinals, _device_count_nvml):
 *   - not set: every GPU; "" (or a first entry that is not a number): none;
 *   - entries are split on ",", each trimmed and read like strtoul ("1gpu2" is 1); the list stops at
 *     the first entry that is not a number or names no GPU of the host (index >= count);
 *   - a list starting with "GPU-" holds UUIDs, each matched by prefix against `nvidia-smi -L`'s; it
 *     stops at the first entry that is not a "GPU-…" one, matches no GPU or more than one;
 *   - "MIG-…" names MIG instances: every simulated GPU has MIG disabled, so none is visible;
 *   - the same GPU named twice: none visible ("Repeated ordinal results in empty set").
 * @param {string | undefined | null} spec
 * @param {number} count GPUs on the host
 * @param {string[]} [uuids] their UUIDs by physical index
 * @returns {number[]} physical indices, by logical index
 */
export function parseVisibleDevices(spec, count, uuids = []) {
  if (spec === undefined || spec === null) return Array.from({ length: count }, (_, i) => i);
  const out = [];
  if (spec.startsWith("MIG-")) return out;
  if (spec.startsWith("GPU-")) {
    for (const entry of spec.split(",")) {
      if (!entry.startsWith("GPU-")) break;
      const matches = [];
      uuids.forEach((uuid, i) => {
        if (uuid.startsWith(entry)) matches.push(i);
      });
      if (matches.length !== 1) break;
      if (out.includes(matches[0])) return [];
      out.push(matches[0]);
    }
    return out;
  }
  for (const entry of spec.split(",")) {
    const index = leadingOrdinal(entry.trim());
    if (index < 0 || index >= count) break;
    if (out.includes(index)) return [];
    out.push(index);
  }
  return out;
}

/**
 * The physical GPUs this process sees (CUDA_VISIBLE_DEVICES of its environment, see
 * parseVisibleDevices): logical GPU i (what `--base-gpu-id`, the TP ranks and torch count) is
 * physical GPU `visibleGpus()[i]` (what nvidia-smi and the usage registry count).
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {number[]}
 */
export function visibleGpus(env = process.env) {
  return parseVisibleDevices(env.CUDA_VISIBLE_DEVICES, gpuSet().count, gpuUuids());
}

function usageDir() {
  const root = sandboxRoot();
  return root ? join(root, "state", "gpu-usage") : null;
}

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === "EPERM";
  }
}

/**
 * MiB used on each GPU by other live processes (per the usage registry), keyed by PHYSICAL GPU
 * index (as nvidia-smi numbers them, whatever CUDA_VISIBLE_DEVICES each process had).
 * @returns {Map<number, number>}
 */
export function memoryUsedByOthers() {
  const used = new Map();
  const live = sharedFn("liveGpuUsage");
  if (live && sandboxRoot()) {
    try {
      for (const entry of live()) {
        if (entry.pid === process.pid) continue;
        entry.gpus.forEach((gpu, i) => {
          const mem = Array.isArray(entry.memMiB) ? Number(entry.memMiB[i]) : Number(entry.memMiB);
          used.set(gpu, (used.get(gpu) ?? 0) + (mem || 0));
        });
      }
      return used;
    } catch {
      used.clear();
    }
  }
  const dir = usageDir();
  if (!dir || !existsSync(dir)) return used;
  for (const file of readdirSync(dir)) {
    const m = /^(\d+)\.json$/.exec(file);
    if (!m) continue;
    const pid = Number.parseInt(m[1], 10);
    if (pid === process.pid || !alive(pid)) continue;
    const entry = readJson(join(dir, file));
    if (!entry || !Array.isArray(entry.gpus)) continue;
    for (const gpu of entry.gpus) {
      used.set(gpu, (used.get(gpu) ?? 0) + (Number(entry.memMiB) || 0));
    }
  }
  return used;
}

/**
 * Registers (or updates) this process's GPU usage: nvidia-smi shows it. `gpus` are PHYSICAL
 * indices (map logical ones through visibleGpus() first).
 * @param {{gpus:number[], memMiB:number, util:number, processName:string}} usage
 */
export function registerGpuUsage(usage) {
  const fn = sharedFn("registerGpuUsage");
  if (fn && sandboxRoot()) {
    try {
      fn({ pid: process.pid, ...usage });
      return;
    } catch {
      // fall back to the file
    }
  }
  const dir = usageDir();
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${process.pid}.json`);
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(usage));
  renameSync(tmp, file);
}

/** Removes this process's GPU usage entry (process exit frees the memory). */
export function clearGpuUsage() {
  const fn = sharedFn("clearGpuUsage");
  if (fn && sandboxRoot()) {
    try {
      fn(process.pid);
    } catch {
      // the file removal below still runs
    }
  }
  const dir = usageDir();
  if (!dir) return;
  rmSync(join(dir, `${process.pid}.json`), { force: true });
}

const DEFAULTS = {
  loadSeconds: 1.5,
  msPerToken: 2,
  ttftMs: 5,
  warmupMs: 150,
  sigtermPollMs: 250,
  /** POST /resume_memory_occupation: the weights back from the pinned CPU backup (compressed). */
  resumeMs: 80,
  /** The kernels' JIT compile at a start whose compile caches are cold (sglang-server-loading.mjs). */
  jitSeconds: 0,
  /** POST /update_weights_from_disk's read of the new weights; -1: loadSeconds × the staged share (sglang-server-update.mjs). */
  updateSeconds: -1,
  dieAfter: null,
};

/**
 * The SGLang fault settings for a server on `port` (engineFaults under the key `sglang`). Returns
 * { modes:Set<string>, loadSeconds, msPerToken, ttftMs, warmupMs, sigtermPollMs, dieAfter }.
 * @param {number | null} port
 * @param {string | null} [modelPath]
 */
export function sglangFaults(port, modelPath = null) {
  return engineFaults("sglang", DEFAULTS, port, modelPath);
}

/**
 * A simulated engine's fault settings for a server on `port`: `defaults` < config[key] < faults[key]
 * < faults[key].ports[port] < faults[key].models[<part of the model path>]. Each level is a mode
 * string, a list, or an object with `mode`/`modes`, any of the defaults' numeric settings, and
 * `die-after` (or `dieAfter`) in seconds.
 * @template {Record<string, unknown>} D
 * @param {string} key @param {D} defaults @param {number | null} port @param {string | null} [modelPath]
 * @returns {D & { modes: Set<string>, dieAfter?: number | null }}
 */
export function engineFaults(key, defaults, port, modelPath = null) {
  /** @type {any} */
  const out = { ...defaults, modes: new Set() };
  const numeric = Object.keys(defaults).filter((k) => typeof defaults[k] === "number");
  /** @param {any} spec */
  const apply = (spec) => {
    if (spec === undefined || spec === null) return;
    if (typeof spec === "string") {
      out.modes.add(spec);
      return;
    }
    if (Array.isArray(spec)) {
      for (const item of spec) apply(item);
      return;
    }
    if (typeof spec !== "object") return;
    if (typeof spec.mode === "string") out.modes.add(spec.mode);
    if (Array.isArray(spec.modes)) for (const m of spec.modes) if (typeof m === "string") out.modes.add(m);
    for (const name of numeric) {
      const v = Number(spec[name]);
      if (spec[name] !== undefined && Number.isFinite(v) && v >= 0) out[name] = v;
    }
    const die = spec["die-after"] ?? spec.dieAfter;
    if (die !== undefined && Number.isFinite(Number(die))) out.dieAfter = Number(die);
  };
  apply(readConfig()?.[key]);
  const fs = readFaults()?.[key];
  apply(fs);
  if (fs && typeof fs === "object" && !Array.isArray(fs)) {
    if (fs.ports && port !== null) apply(fs.ports[String(port)]);
    if (fs.models && modelPath !== null)
      for (const [part, spec] of Object.entries(fs.models)) if (modelPath.includes(part)) apply(spec);
  }
  return out;
}
