/**
 * Imitates: nothing by itself — the simulated host's Python virtual environment as the python and
 * pip shims see it (shared module, not a command):
 *
 *   <venv>/lib/python3.12/site-packages/__editable__.<name>-<version>.pth   an editable install
 *       (what setuptools writes for `pip install -e <dir>`); its first line is the project
 *       directory that goes on sys.path, so `import sglang` finds `<dir>/sglang/`
 *   <venv>/lib/python3.12/site-packages/<name>-<version>.dist-info/          its metadata
 *   <sandbox>/state/cuda-stack.json   the packages pip changed in the venv:
 *       { replaced, by, at, changes: [{ name, from, to }], packages: { name: version | null } }
 *       (`replaced` is true once pip installed or removed a package of the CUDA stack)
 *
 * Every other package of the venv is the host's working CUDA 13 stack, BASE_PACKAGES below.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { readJsonFile, sandboxPaths, sandboxRoot, writeJsonAtomic } from "./sandbox.mjs";

/** The packages of the host's venv before pip touches it (a hand-built CUDA 13 stack). */
export const BASE_PACKAGES = {
  aiohttp: "3.13.2",
  fastapi: "0.121.3",
  "flashinfer-cubin": "0.5.3",
  "flashinfer-python": "0.5.3",
  "huggingface-hub": "1.3.3",
  "nvidia-cudnn-cu13": "9.15.1.9",
  "nvidia-nccl-cu13": "2.28.9",
  numpy: "2.3.5",
  orjson: "3.11.4",
  packaging: "25.0",
  pip: "24.0",
  psutil: "7.1.3",
  pydantic: "2.12.4",
  pyzmq: "27.1.0",
  requests: "2.32.5",
  safetensors: "0.6.2",
  sentencepiece: "0.2.1",
  setuptools: "80.9.0",
  "sgl-kernel": "0.3.20",
  tokenizers: "0.22.1",
  torch: "2.9.1+cu130",
  torchaudio: "2.9.1+cu130",
  torchvision: "0.24.1+cu130",
  tqdm: "4.67.1",
  transformers: "4.57.1",
  triton: "3.5.1",
  uvicorn: "0.38.0",
  uvloop: "0.22.1",
  wheel: "0.45.1",
  xgrammar: "0.1.27",
};

/** Python module → distribution, for `<module>.__version__`. */
export const MODULE_DISTRIBUTIONS = {
  torch: "torch",
  torchvision: "torchvision",
  torchaudio: "torchaudio",
  transformers: "transformers",
  flashinfer: "flashinfer-python",
  sgl_kernel: "sgl-kernel",
  triton: "triton",
  numpy: "numpy",
  requests: "requests",
  aiohttp: "aiohttp",
  huggingface_hub: "huggingface-hub",
  safetensors: "safetensors",
  tokenizers: "tokenizers",
  xgrammar: "xgrammar",
  vllm: "vllm",
};

/** PEP 503 normalized name. @param {string} name */
export function normalizeName(name) {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

/** Whether a distribution belongs to the CUDA stack pip must not replace. @param {string} name */
export function isCudaStack(name) {
  const n = normalizeName(name);
  return (
    [
      "torch",
      "torchvision",
      "torchaudio",
      "triton",
      "flashinfer-python",
      "flashinfer-cubin",
      "sgl-kernel",
    ].includes(n) ||
    n.startsWith("nvidia-") ||
    n.startsWith("cuda-")
  );
}

/**
 * @typedef {{ name: string; version: string; marker: string; projectDir: string; mtimeMs: number }} EditableInstall
 */

/** Every editable install in site-packages (newest first). @param {string} [root] @returns {EditableInstall[]} */
export function editableInstalls(root = sandboxRoot()) {
  const site = sandboxPaths(root).sitePackagesDir;
  let entries = [];
  try {
    entries = readdirSync(site);
  } catch {
    return [];
  }
  /** @type {EditableInstall[]} */
  const found = [];
  for (const entry of entries) {
    const m = /^__editable__\.(.+)-([^-]+)\.pth$/.exec(entry);
    if (!m) continue;
    const marker = join(site, entry);
    try {
      const line = readFileSync(marker, "utf8")
        .split("\n")
        .map((l) => l.trim())
        .find((l) => l !== "" && !l.startsWith("#") && !l.startsWith("import "));
      if (line === undefined) continue;
      found.push({
        name: m[1],
        version: m[2],
        marker,
        projectDir: resolve(site, line),
        mtimeMs: statSync(marker).mtimeMs,
      });
    } catch {
      // removed meanwhile
    }
  }
  return found.sort((a, b) => b.mtimeMs - a.mtimeMs);
}

/** The editable install of one distribution, or null. @param {string} name @param {string} [root] */
export function editableInstall(name, root = sandboxRoot()) {
  return editableInstalls(root).find((e) => normalizeName(e.name) === normalizeName(name)) ?? null;
}

/**
 * The importable SGLang: the newest `__editable__.sglang-*.pth` whose directory holds `sglang/`.
 * `version` is `__version__` of `<projectDir>/sglang/version.py` (null when that file has none).
 * @param {string} [root]
 * @returns {{ projectDir: string; packageDir: string; version: string | null; installedVersion: string | null } | null}
 */
export function importableSglang(root = sandboxRoot(), env = process.env) {
  // PYTHONPATH's directories come before site-packages on sys.path, so a `sglang/` package there wins
  // over the venv's editable install (Python docs, "The initialization of the sys.path module search
  // path"; an editable install's finder is appended to sys.meta_path, after the path-based finder).
  const onPath = (env.PYTHONPATH ?? "")
    .split(":")
    .filter((dir) => dir !== "")
    .find((dir) => existsSync(join(dir, "sglang")));
  const install =
    onPath === undefined ? editableInstall("sglang", root) : { projectDir: onPath, version: null };
  if (install === null) return null;
  const packageDir = join(install.projectDir, "sglang");
  if (!existsSync(packageDir)) return null;
  let version = null;
  try {
    const m = /__version__\s*=\s*["']([^"']+)["']/.exec(readFileSync(join(packageDir, "version.py"), "utf8"));
    version = m ? m[1] : null;
  } catch {
    version = null;
  }
  return { projectDir: install.projectDir, packageDir, version, installedVersion: install.version };
}

/**
 * @typedef {{ replaced: boolean; by?: string; at?: string; changes: { name: string; from: string | null; to: string | null }[]; packages: Record<string, string | null> }} StackState
 */

/** state/cuda-stack.json, or the untouched state. @param {string} [root] @returns {StackState} */
export function readStackState(root = sandboxRoot()) {
  const state = readJsonFile(sandboxPaths(root).cudaStackFile, null);
  if (state === null || typeof state !== "object") return { replaced: false, changes: [], packages: {} };
  return {
    ...state,
    replaced: state.replaced === true,
    changes: Array.isArray(state.changes) ? state.changes : [],
    packages: state.packages && typeof state.packages === "object" ? state.packages : {},
  };
}

/**
 * Records package changes made by pip: `changes` are applied to the venv's packages.
 * @param {{ name: string; from: string | null; to: string | null }[]} changes
 * @param {string} by the command line that made them
 * @param {string} [root]
 */
export function recordPackageChanges(changes, by, root = sandboxRoot()) {
  if (changes.length === 0) return;
  const state = readStackState(root);
  for (const change of changes) state.packages[change.name] = change.to;
  state.changes.push(...changes);
  if (changes.some((c) => isCudaStack(c.name))) {
    state.replaced = true;
    state.by = by;
    state.at = new Date().toISOString();
  }
  writeJsonAtomic(sandboxPaths(root).cudaStackFile, state);
}

/**
 * Installed distributions (display name → version): the base stack with pip's changes, plus
 * editable installs. @param {string} [root] @returns {Map<string, string>}
 */
export function installedPackages(root = sandboxRoot()) {
  const packages = new Map(Object.entries(BASE_PACKAGES));
  for (const [name, version] of Object.entries(readStackState(root).packages)) {
    const existing = [...packages.keys()].find((k) => normalizeName(k) === normalizeName(name));
    if (existing !== undefined) packages.delete(existing);
    if (version !== null) packages.set(name, version);
  }
  for (const install of editableInstalls(root).reverse()) packages.set(install.name, install.version);
  return packages;
}

/** The installed version of a distribution, or null. @param {string} name @param {string} [root] */
export function installedVersion(name, root = sandboxRoot()) {
  for (const [key, version] of installedPackages(root))
    if (normalizeName(key) === normalizeName(name)) return version;
  return null;
}

/** `__version__` of an importable module (null when its distribution is not installed). @param {string} module @param {string} [root] */
export function moduleVersion(module, root = sandboxRoot()) {
  const dist = MODULE_DISTRIBUTIONS[module];
  return dist === undefined ? null : installedVersion(dist, root);
}

/** setuptools' file-name form of a distribution name. @param {string} name */
function wheelName(name) {
  return name.replace(/[-.]+/g, "_");
}

/**
 * Writes an editable install as setuptools and pip do: removes every older install of the same
 * distribution (marker and dist-info), then writes `__editable__.<name>-<version>.pth` holding
 * `projectDir` and `<name>-<version>.dist-info/` (METADATA, direct_url.json, INSTALLER, RECORD).
 * @param {{ name: string; version: string; projectDir: string; summary?: string; requires?: string[]; license?: string }} dist
 * @param {string} [root]
 * @returns {string | null} the version that was installed before, if any
 */
export function writeEditableInstall(dist, root = sandboxRoot()) {
  const previous = removeEditableInstall(dist.name, root);
  const site = sandboxPaths(root).sitePackagesDir;
  const safe = wheelName(dist.name);
  mkdirSync(site, { recursive: true });
  const projectDir = resolve(dist.projectDir);
  writeFileSync(join(site, `__editable__.${safe}-${dist.version}.pth`), `${projectDir}\n`);
  const info = join(site, `${safe}-${dist.version}.dist-info`);
  mkdirSync(info, { recursive: true });
  const metadata = [
    "Metadata-Version: 2.4",
    `Name: ${dist.name}`,
    `Version: ${dist.version}`,
    `Summary: ${dist.summary ?? ""}`,
    ...(dist.license ? [`License: ${dist.license}`] : []),
    "Requires-Python: >=3.10",
    ...(dist.requires ?? []).map((r) => `Requires-Dist: ${r}`),
    "",
  ];
  writeFileSync(join(info, "METADATA"), metadata.join("\n"));
  writeFileSync(
    join(info, "direct_url.json"),
    JSON.stringify({ dir_info: { editable: true }, url: `file://${projectDir}` }),
  );
  writeFileSync(join(info, "INSTALLER"), "pip\n");
  writeFileSync(
    join(info, "RECORD"),
    [
      `__editable__.${safe}-${dist.version}.pth,,`,
      `${safe}-${dist.version}.dist-info/INSTALLER,,`,
      `${safe}-${dist.version}.dist-info/METADATA,,`,
      `${safe}-${dist.version}.dist-info/RECORD,,`,
      `${safe}-${dist.version}.dist-info/direct_url.json,,`,
      "",
    ].join("\n"),
  );
  return previous;
}

/**
 * Removes every editable install (markers and dist-info) of a distribution.
 * @param {string} name @param {string} [root] @returns {string | null} the newest removed version
 */
export function removeEditableInstall(name, root = sandboxRoot()) {
  const site = sandboxPaths(root).sitePackagesDir;
  const installs = editableInstalls(root).filter((e) => normalizeName(e.name) === normalizeName(name));
  for (const install of installs) rmSync(install.marker, { force: true });
  let entries = [];
  try {
    entries = readdirSync(site);
  } catch {
    entries = [];
  }
  for (const entry of entries) {
    const m = /^(.+)-([^-]+)\.dist-info$/.exec(entry);
    if (m && normalizeName(m[1]) === normalizeName(name))
      rmSync(join(site, entry), { recursive: true, force: true });
  }
  return installs[0]?.version ?? null;
}

/**
 * Metadata of an editable install's dist-info: { summary, license, requires (names) }.
 * @param {EditableInstall} install
 */
export function editableMetadata(install) {
  const dir = join(install.marker, "..", `${wheelName(install.name)}-${install.version}.dist-info`);
  let text = "";
  try {
    text = readFileSync(join(dir, "METADATA"), "utf8");
  } catch {
    text = "";
  }
  const field = (key) => new RegExp(`^${key}: ?(.*)$`, "m").exec(text)?.[1] ?? "";
  const requires = [...text.matchAll(/^Requires-Dist: ([A-Za-z0-9][A-Za-z0-9._-]*)/gm)].map((m) => m[1]);
  return { summary: field("Summary"), license: field("License"), requires };
}
