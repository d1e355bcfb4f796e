/**
 * Imitates: `<venv>/bin/python` (CPython 3.12.3) on the simulated GPU host, as far as the bot
 * uses it:
 *   python --version / -V                       -> "Python 3.12.3"
 *   python -c "import sglang; print(sglang.__version__)"   (tiny evaluator, see SGLANG.md): sglang
 *       is importable while the venv holds an `__editable__.sglang-*.pth` marker (venv.mjs)
 *   python -m sglang.launch_server <flags>      -> simulated SGLang server (sglang-server.mjs)
 *   python -m sglang.bench_serving <flags>      -> simulated benchmark client (sglang-bench-serving.mjs)
 *   python -m vllm.entrypoints.openai.api_server <flags> / python -m vllm.entrypoints.cli.main ...
 *                                               -> simulated vLLM (vllm-server.mjs, vllm-cli.mjs; see VLLM.md),
 *                                                  when vLLM is installed in the venv (vllm-host.mjs)
 *   python -m pip ...                           -> delegated to shims/pip.mjs when that exists
 * Anything else fails the way Python does (exit 1 "No module named ...", exit 2 for bad options
 * or script files). The venv wrapper runs `node shims/python.mjs "$@"`; it may export
 * MODELSWAP_PYTHON="$0" so messages name the real interpreter path.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fault } from "./sandbox.mjs";
import { gpuSet, installedSglang, recordCall, venvPython, visibleGpus } from "./sglang-host.mjs";
import { moduleVersion } from "./venv.mjs";
import { vllmOnPath } from "./vllm-host.mjs";

const VERSION = "3.12.3";
const EXE = process.env.MODELSWAP_PYTHON || venvPython();
const HERE = dirname(fileURLToPath(import.meta.url));

const argv = process.argv.slice(2);
recordCall("python", argv);

/** @param {string} text @param {number} code */
function fail(text, code) {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
  process.exit(code);
}

function usageError(opt) {
  fail(
    `Unknown option: ${opt}\nusage: ${EXE} [option] ... [-c cmd | -m mod | file | -] [arg] ...\nTry \`python -h' for more information.`,
    2,
  );
}

async function main() {
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i];
    if (arg === "-V" || arg === "--version") {
      process.stdout.write(`Python ${VERSION}\n`);
      return 0;
    }
    if (arg === "-VV") {
      process.stdout.write(`Python ${VERSION} (main, Nov  6 2025, 13:44:16) [GCC 13.3.0]\n`);
      return 0;
    }
    if (arg === "-h" || arg === "--help" || arg === "-?") {
      process.stdout.write(
        `usage: ${EXE} [option] ... [-c cmd | -m mod | file | -] [arg] ...\nOptions (and corresponding environment variables):\n-c cmd : program passed in as string (terminates option list)\n-m mod : run library module as a script (terminates option list)\n-V     : print the Python version number and exit (also --version)\n`,
      );
      return 0;
    }
    if (arg === "-c") {
      if (i + 1 >= argv.length)
        fail(
          `Argument expected for the -c option\nusage: ${EXE} [option] ... [-c cmd | -m mod | file | -] [arg] ...\nTry \`python -h' for more information.`,
          2,
        );
      return runCode(argv[i + 1]);
    }
    if (arg.startsWith("-c") && arg.length > 2) return runCode(arg.slice(2));
    if (arg === "-m") {
      if (i + 1 >= argv.length)
        fail(
          `Argument expected for the -m option\nusage: ${EXE} [option] ... [-c cmd | -m mod | file | -] [arg] ...\nTry \`python -h' for more information.`,
          2,
        );
      return runModule(argv[i + 1], argv.slice(i + 2));
    }
    if (arg.startsWith("-m") && arg.length > 2) return runModule(arg.slice(2), argv.slice(i + 1));
    if (arg === "-X" || arg === "-W") {
      i += 2;
      continue;
    }
    if (/^-[uBEsIOqPSd]+$/.test(arg) || /^-[XW].+/.test(arg)) {
      i++;
      continue;
    }
    if (arg === "-") return runCode(readFileSync(0, "utf8"));
    if (arg.startsWith("-")) usageError(arg);
    if (!existsSync(arg)) fail(`${EXE}: can't open file '${arg}': [Errno 2] No such file or directory`, 2);
    fail(
      `${EXE}: can't run '${arg}': the simulated interpreter runs only -c snippets and known -m modules`,
      2,
    );
  }
  // No program: Python reads one from stdin.
  return runCode(process.stdin.isTTY ? "" : readFileSync(0, "utf8"));
}

/** @param {string} module @param {string[]} rest */
async function runModule(module, rest) {
  if (
    (module === "sglang.launch_server" || module === "sglang.bench_serving") &&
    installedSglang() === null
  ) {
    fail(
      `${EXE}: Error while finding module specification for '${module}' (ModuleNotFoundError: No module named 'sglang')`,
      1,
    );
  }
  if (module === "sglang.launch_server") {
    const { launchServer } = await import("./sglang-server.mjs");
    await launchServer(rest);
    return null; // the server keeps running; it exits on its own
  }
  if (module === "sglang.bench_serving") {
    const { benchServing } = await import("./sglang-bench-serving.mjs");
    return await benchServing(rest);
  }
  if (module === "vllm" || module.startsWith("vllm.")) {
    const { installedVllm } = await import("./vllm-host.mjs");
    if (installedVllm() === null)
      fail(
        `${EXE}: Error while finding module specification for '${module}' (ModuleNotFoundError: No module named 'vllm')`,
        1,
      );
    process.env.MODELSWAP_VLLM_ARGV0 ??= EXE;
    if (module === "vllm.entrypoints.openai.api_server") {
      const { vllmServe } = await import("./vllm-server.mjs");
      await vllmServe(rest, "api_server");
      return null;
    }
    if (module === "vllm.entrypoints.cli.main") {
      const { vllmMain } = await import("./vllm-cli.mjs");
      return await vllmMain(rest);
    }
  }
  if (module === "pip") {
    const pipShim = join(HERE, "pip.mjs");
    if (existsSync(pipShim)) {
      const r = spawnSync(process.execPath, [pipShim, ...rest], { stdio: "inherit" });
      return r.status ?? 1;
    }
  }
  if ((module === "sglang" || module.startsWith("sglang.")) && installedSglang() === null) {
    fail(
      `${EXE}: Error while finding module specification for '${module}' (ModuleNotFoundError: No module named 'sglang')`,
      1,
    );
  }
  fail(`${EXE}: No module named ${module}`, 1);
  return 1;
}

// -------------------------------------------------------------------------------------------
// A very small evaluator for import checks.

/** Standard library modules the evaluator can import. */
const STDLIB = new Set([
  "sys",
  "os",
  "json",
  "platform",
  "importlib",
  "time",
  "re",
  "subprocess",
  "pathlib",
  "math",
]);

/** Third-party modules: importable while their distribution is installed in the venv (venv.mjs). */
const THIRD_PARTY = [
  "torch",
  "torchvision",
  "torchaudio",
  "transformers",
  "flashinfer",
  "sgl_kernel",
  "triton",
  "numpy",
  "requests",
  "aiohttp",
  "huggingface_hub",
  "safetensors",
  "tokenizers",
  "xgrammar",
  "vllm",
];

/** CUDA version a torch build was made for: the `+cuXYZ` label, else PyPI's default (12.8). @param {string} v */
function torchCuda(v) {
  const m = /\+cu(\d+)(\d)$/.exec(v);
  return m ? `${m[1]}.${m[2]}` : "12.8";
}

class PyError extends Error {
  /** @param {string} line */
  constructor(line) {
    super(line);
    this.line = line;
  }
}

/** Splits source into statements on newlines and semicolons outside string literals. @param {string} src */
function statements(src) {
  const out = [];
  let cur = "";
  let quote = null;
  for (let i = 0; i < src.length; i++) {
    const ch = src[i];
    if (quote) {
      cur += ch;
      if (ch === "\\") {
        cur += src[++i] ?? "";
      } else if (ch === quote) {
        quote = null;
      }
      continue;
    }
    if (ch === '"' || ch === "'") {
      quote = ch;
      cur += ch;
      continue;
    }
    if (ch === ";" || ch === "\n") {
      out.push(cur);
      cur = "";
      continue;
    }
    cur += ch;
  }
  out.push(cur);
  return out.map((s) => s.replace(/#.*$/, "").trim()).filter((s) => s !== "");
}

/** @param {string} code */
function runCode(code) {
  /** @type {Map<string, string>} name -> module path */
  const names = new Map([["__name__", "__main__"]]);
  const sglang = installedSglang();
  const version = sglang?.version ?? null;
  const gpus = gpuSet();
  // torch sees only the GPUs CUDA_VISIBLE_DEVICES names (all of one model: the set is uniform)
  const visible = visibleGpus().length;
  const sglangFile = join(sglang?.packageDir ?? "/usr/lib/python3/dist-packages/sglang", "__init__.py");
  /** @type {Record<string, string>} */
  const versions = {};
  for (const mod of THIRD_PARTY) {
    const v = moduleVersion(mod);
    if (v !== null) versions[mod] = v;
  }
  // a vLLM on PYTHONPATH (a build's --target directory) is the one `import vllm` finds
  const vllmPath = vllmOnPath();
  if (vllmPath !== null) versions.vllm = vllmPath.version;

  /** @param {string} mod */
  const importModule = (mod) => {
    const top = mod.split(".")[0];
    if (top === "sglang") {
      if (sglang === null) throw new PyError(`ModuleNotFoundError: No module named 'sglang'`);
      if (version === null) throw new PyError(`ModuleNotFoundError: No module named 'sglang.version'`);
      // fault "import": { seconds } — the first import of a fresh engine build is slow (every .pyc
      // compiled, torch and CUDA initialised); the bench sets the engine build's length with it
      const slow = Number(/** @type {any} */ (fault("import"))?.seconds ?? 0);
      if (Number.isFinite(slow) && slow > 0)
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, slow * 1000);
      return;
    }
    if (!STDLIB.has(top) && !(top in versions))
      throw new PyError(`ModuleNotFoundError: No module named '${top}'`);
  };

  /** @param {string} expr @returns {string} Python str() of the value */
  const evaluate = (expr) => {
    const e = expr.trim();
    const str = /^(?:[rbuf]?)(['"])(.*)\1$/s.exec(e);
    if (str) return str[2].replace(/\\n/g, "\n").replace(/\\t/g, "\t");
    if (/^-?\d+(\.\d+)?$/.test(e)) return e;
    if (e === "True" || e === "False" || e === "None") return e;
    const call = /^([A-Za-z_][\w.]*)\((.*)\)$/.exec(e);
    const dotted = call ? call[1] : e;
    if (!/^[A-Za-z_][\w.]*$/.test(dotted))
      throw new PyError(`NotImplementedError: the simulated python cannot evaluate: ${e}`);
    const [head, ...rest] = dotted.split(".");
    const bound = names.get(head);
    if (bound === undefined) throw new PyError(`NameError: name '${head}' is not defined`);
    const full = [bound, ...rest].join(".");
    const values = {
      "sglang.__version__": version ?? "",
      "sglang.version.__version__": version ?? "",
      "sglang.__file__": sglangFile,
      "torch.version.cuda": torchCuda(versions.torch ?? ""),
      "torch.cuda.is_available": visible > 0 ? "True" : "False",
      "torch.cuda.device_count": String(visible),
      "torch.cuda.get_device_name": gpus.name,
      "torch.cuda.get_device_capability": `(${Math.floor(gpus.cc)}, ${Math.round((gpus.cc % 1) * 10)})`,
      "sys.version": `${VERSION} (main, Nov  6 2025, 13:44:16) [GCC 13.3.0]`,
      "sys.executable": EXE,
      "platform.python_version": VERSION,
      __name__: "__main__",
    };
    for (const [mod, v] of Object.entries(versions)) values[`${mod}.__version__`] = v;
    // with no GPU visible, torch's lazy CUDA init fails on the first call that needs a device
    if (
      visible === 0 &&
      (full === "torch.cuda.get_device_name" || full === "torch.cuda.get_device_capability")
    )
      throw new PyError("RuntimeError: No CUDA GPUs are available");
    if (full in values) return values[full];
    throw new PyError(
      `AttributeError: module '${bound.split(".")[0]}' has no attribute '${rest.join(".") || head}'`,
    );
  };

  /** Splits call arguments on top-level commas. @param {string} s */
  const args = (s) => {
    const out = [];
    let depth = 0;
    let quote = null;
    let cur = "";
    for (const ch of s) {
      if (quote) {
        cur += ch;
        if (ch === quote) quote = null;
        continue;
      }
      if (ch === '"' || ch === "'") quote = ch;
      if (ch === "(") depth++;
      if (ch === ")") depth--;
      if (ch === "," && depth === 0) {
        out.push(cur);
        cur = "";
        continue;
      }
      cur += ch;
    }
    if (cur.trim() !== "") out.push(cur);
    return out;
  };

  const stmts = statements(code);
  let lineNo = 1;
  try {
    for (const stmt of stmts) {
      if (stmt === "pass") continue;
      const imp = /^import\s+(.+)$/.exec(stmt);
      if (imp) {
        for (const part of imp[1].split(",")) {
          const [mod, alias] = part.trim().split(/\s+as\s+/);
          importModule(mod);
          if (alias) names.set(alias, mod);
          else names.set(mod.split(".")[0], mod.split(".")[0]);
        }
        continue;
      }
      const from = /^from\s+([\w.]+)\s+import\s+(.+)$/.exec(stmt);
      if (from) {
        importModule(from[1]);
        for (const part of from[2].replace(/[()]/g, "").split(",")) {
          const [name, alias] = part.trim().split(/\s+as\s+/);
          names.set(alias ?? name, `${from[1]}.${name}`);
        }
        continue;
      }
      const print = /^print\((.*)\)$/s.exec(stmt);
      if (print) {
        process.stdout.write(`${args(print[1]).map(evaluate).join(" ")}\n`);
        continue;
      }
      throw new PyError(`NotImplementedError: the simulated python cannot run: ${stmt}`);
    }
    lineNo++;
  } catch (err) {
    if (!(err instanceof PyError)) throw err;
    process.stderr.write(
      `Traceback (most recent call last):\n  File "<string>", line ${lineNo}, in <module>\n${err.line}\n`,
    );
    return 1;
  }
  return 0;
}

const code = await main();
if (code !== null && code !== undefined) process.exitCode = code;
