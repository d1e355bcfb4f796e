/**
 * Imitates: nothing by itself — the view of the simulated GPU host that the simulated vLLM
 * (`vllm serve`, `vllm bench serve`, `python -m vllm.entrypoints.openai.api_server`) needs, on top of
 * the SGLang sim's host view (sglang-host.mjs: GPU set, CUDA_VISIBLE_DEVICES, GPU-usage registry):
 *
 *   - which vLLM the venv holds: a regular wheel install as `pip install vllm==X` leaves it
 *     (`<site-packages>/vllm/`, `vllm-X.dist-info/`, the `<venv>/bin/vllm` console script), recorded in
 *     the venv's package state (venv.mjs) so `python -c "import vllm"` and `pip` see it too;
 *   - the `vllm` fault switches of state/faults.json (same forms as `sglang`: a mode string, a list, or
 *     an object with mode/modes, loadSeconds, msPerToken, ttftMs, wakeMs, ports, models);
 *   - vLLM's log line prefix: `(APIServer pid=N) INFO 03-20 10:00:00 [api_server.py:1896] message`
 *     (vllm/logger.py `_FORMAT` "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s", date
 *     format "%m-%d %H:%M:%S"; the "(APIServer pid=N)" process tag of vllm/utils/system_utils.py
 *     decorate_logs, which every engine and worker process gets too).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { engineFaults, sitePackagesDir } from "./sglang-host.mjs";
import { installedVersion } from "./venv.mjs";

/** The vLLM version this sim models by default (the first release with `--shutdown-timeout`). */
export const VLLM_VERSION = "0.18.0";

/**
 * The installed vLLM: { version, packageDir } when the venv's package state lists `vllm` (what the
 * pip shim or installVllm records), else null (then `import vllm` fails and `<venv>/bin/vllm` is gone).
 * @returns {{ version: string; packageDir: string } | null}
 */
export function installedVllm() {
  const onPath = vllmOnPath();
  if (onPath !== null) return onPath;
  let version = null;
  try {
    version = installedVersion("vllm");
  } catch {
    version = null;
  }
  if (version === null) return null;
  const site = sitePackagesDir() ?? "/usr/local/lib/python3.12/dist-packages";
  const packageDir = join(site, "vllm");
  return { version, packageDir, compiled: true };
}

/** @param {string} path */
function readText(path) {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/**
 * A vLLM on PYTHONPATH (a build's `--target` directory, vllm-build.mjs): PYTHONPATH's directories come
 * before site-packages on sys.path, so it wins over the venv's install. Its version is its
 * `_version.py`'s (setuptools-scm); `compiled`: whether its compiled extensions are there (a raw checkout
 * on PYTHONPATH has none).
 * @returns {{ version: string; packageDir: string; compiled: boolean } | null}
 */
export function vllmOnPath(env = process.env) {
  for (const dir of (env.PYTHONPATH ?? "").split(":").filter((d) => d !== "")) {
    const packageDir = join(dir, "vllm");
    if (!existsSync(join(packageDir, "__init__.py"))) continue;
    const m = /__version__\s*=\s*(?:version\s*=\s*)?["']([^"']+)["']/.exec(
      readText(join(packageDir, "_version.py")) ?? "",
    );
    return { version: m?.[1] ?? "0.0.0", packageDir, compiled: existsSync(join(packageDir, "_C.abi3.so")) };
  }
  return null;
}

/**
 * `vllm serve` flags that came in later releases, with the EngineArgs field that brings each
 * (vllm/engine/arg_utils.py): a vLLM whose source lacks the field has no such flag.
 */
const LATER_FLAGS = [{ flag: "--shutdown-timeout", field: "shutdown_timeout" }];

/** The `vllm serve` flags the installed vLLM's own source lacks (none for a wheel install of 0.18). */
export function omittedFlags() {
  const pkg = installedVllm()?.packageDir;
  const argUtils = pkg === undefined ? null : readText(join(pkg, "engine", "arg_utils.py"));
  if (argUtils === null) return [];
  return LATER_FLAGS.filter((f) => !argUtils.includes(`${f.field}:`)).map((f) => f.flag);
}

const DEFAULTS = {
  loadSeconds: 1.5,
  msPerToken: 2,
  ttftMs: 5,
  /** /wake_up after a level-1 sleep: the weights come back from pinned CPU memory (compressed). */
  wakeMs: 60,
  /** torch.compile of the model when its cache is cold (vllm-server-engine.mjs torchCompile). */
  compileSeconds: 0.02,
  /** Log interval of the "Engine 000: Avg prompt throughput" line (VLLM_LOG_STATS_INTERVAL, real 10 s). */
  statsIntervalMs: 10_000,
};

/**
 * The vLLM fault settings for a server on `port` (engineFaults under the key `vllm`).
 * @param {number | null} port
 * @param {string | null} [modelPath]
 */
export function vllmFaults(port, modelPath = null) {
  return engineFaults("vllm", DEFAULTS, port, modelPath);
}

/** `MM-DD HH:MM:SS`, vLLM's log date format. */
export function vllmStamp() {
  const d = new Date();
  const p = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/**
 * One vLLM log line. `proc` is the process tag ("APIServer", "EngineCore_DP0", "Worker_TP1"), `where`
 * the "file.py:line" of the logging call.
 * @param {string} proc @param {number} pid @param {string} level @param {string} where @param {string} msg
 */
export function vllmLine(proc, pid, level, where, msg) {
  return `(${proc} pid=${pid}) ${level} ${vllmStamp()} [${where}] ${msg}`;
}

/** Python's repr of round(x, 2) (`2.6`, `139.81`), as vLLM's memory messages print GiB. @param {number} x */
export function pyRound2(x) {
  const r = Math.round(x * 100) / 100;
  return Number.isInteger(r) ? `${r}.0` : String(r);
}

/** `f"{n:,}"` @param {number} n */
export function thousands(n) {
  return Math.trunc(n).toLocaleString("en-US");
}
