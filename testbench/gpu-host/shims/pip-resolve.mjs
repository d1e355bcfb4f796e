/**
 * Imitates: nothing by itself — what the simulated `pip` needs to "resolve" a project: reading
 * pyproject.toml ([project] name, version, dependencies), PEP 508 requirement strings, PEP 440
 * version matching (a local label such as `+cu130` is ignored by `==2.9.1`, as in pip), and a tiny
 * package index: the versions and wheel files pip would download (torch pulls its CUDA 12 wheels).
 */
import { installedVersion, normalizeName } from "./venv.mjs";

/**
 * Minimal TOML reading of `[project]`: name, version, description, license, dependencies.
 * @param {string} text
 * @returns {{ name: string | null; version: string | null; description: string; dependencies: string[] }}
 */
export function parsePyproject(text) {
  const lines = text.split("\n");
  let inProject = false;
  /** @type {Record<string, string>} */
  const scalars = {};
  /** @type {string[]} */
  const dependencies = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\s+#.*$/, "").trim();
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      inProject = header[1].trim() === "project";
      continue;
    }
    if (!inProject) continue;
    const kv = /^([A-Za-z0-9_-]+)\s*=\s*(.*)$/.exec(line);
    if (!kv) continue;
    const [, key, value] = kv;
    if (key === "dependencies") {
      let body = value;
      while (!body.includes("]") && i + 1 < lines.length) body += `\n${lines[++i]}`;
      for (const m of body.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'/g)) dependencies.push(m[1] ?? m[2]);
      continue;
    }
    const str = /^"((?:[^"\\]|\\.)*)"|^'([^']*)'/.exec(value);
    if (str) scalars[key] = str[1] ?? str[2];
  }
  return {
    name: scalars.name ?? null,
    version: scalars.version ?? null,
    description: scalars.description ?? "",
    dependencies,
  };
}

/**
 * A PEP 508 requirement: name, optional `op version` (first specifier only); null for one that
 * only applies under an extra.
 * @param {string} text
 * @returns {{ text: string; name: string; op: string | null; version: string | null } | null}
 */
export function parseRequirement(text) {
  const [spec, marker] = text.split(";");
  if (marker && /\bextra\s*==/.test(marker)) return null;
  const m =
    /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:(===|==|>=|<=|~=|!=|>|<)\s*([^\s,;]+))?/.exec(
      spec,
    );
  if (!m) return null;
  return { text: text.trim(), name: m[1], op: m[2] ?? null, version: m[3] ?? null };
}

/** The public part of a version (without `+local`). @param {string} v */
export function publicVersion(v) {
  return v.split("+")[0];
}

/** Compares two versions numerically, segment by segment (post/dev suffixes as extra segments). */
export function compareVersions(a, b) {
  const parts = (/** @type {string} */ v) =>
    publicVersion(v)
      .replace(/^v/, "")
      .split(/[.-]|(?=post)|(?=dev)|(?=rc)/)
      .map((p) => {
        if (/^\d+$/.test(p)) return Number(p);
        const post = /^post(\d*)$/.exec(p);
        if (post) return 0.5 + Number(post[1] || 0) / 1e6;
        return -1;
      });
  const x = parts(a);
  const y = parts(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** Whether an installed version satisfies a requirement. */
export function satisfies(installed, op, version) {
  if (installed === null) return false;
  if (op === null || version === null) return true;
  const c = compareVersions(installed, version);
  switch (op) {
    case "==":
    case "===":
      return version.includes("+") ? installed === version : c === 0;
    case "!=":
      return c !== 0;
    case ">=":
      return c >= 0;
    case "<=":
      return c <= 0;
    case ">":
      return c > 0;
    case "<":
      return c < 0;
    case "~=":
      return c >= 0;
    default:
      return true;
  }
}

/** Newest versions the simulated index offers (PyPI, default CUDA 12.8 builds). */
const LATEST = {
  torch: "2.9.1",
  torchvision: "0.24.1",
  torchaudio: "2.9.1",
  triton: "3.5.1",
  "nvidia-cutlass-dsl": "4.3.1",
  "cuda-python": "13.0.3",
};

/** Wheel file and size of the big binary packages. */
const WHEELS = {
  torch: { tag: "cp312-cp312-manylinux_2_28_x86_64", mb: { "2.8.0": 887.9, "2.9.1": 899.7 } },
  torchaudio: { tag: "cp312-cp312-manylinux_2_28_x86_64", mb: { "2.8.0": 4.0, "2.9.1": 2.1 } },
  torchvision: { tag: "cp312-cp312-manylinux_2_28_x86_64", mb: { "0.24.1": 8.0 } },
  triton: { tag: "cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64", mb: { "3.4.0": 155.5 } },
  "sgl-kernel": { tag: "cp310-abi3-manylinux2014_x86_64", mb: { "0.3.19": 540.3, "0.3.9.post2": 421.8 } },
  "flashinfer-python": { tag: "py3-none-any", mb: { "0.5.3": 6.9, "0.3.1": 4.4 } },
  "flashinfer-cubin": { tag: "py3-none-any", mb: { "0.5.3": 192.4, "0.3.1": 151.0 } },
  "nvidia-cutlass-dsl": { tag: "cp312-cp312-manylinux_2_28_x86_64", mb: { "4.2.1": 58.2, "4.1.0": 57.1 } },
  "nvidia-cudnn-cu12": { tag: "py3-none-manylinux_2_27_x86_64", mb: { "9.10.2.21": 706.8 } },
  "nvidia-cublas-cu12": { tag: "py3-none-manylinux_2_27_x86_64", mb: { "12.8.4.1": 594.3 } },
  "nvidia-nccl-cu12": {
    tag: "py3-none-manylinux_2_18_x86_64.manylinux_2_28_x86_64",
    mb: { "2.27.3": 322.4 },
  },
  "nvidia-cuda-runtime-cu12": {
    tag: "py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64",
    mb: { "12.8.90": 0.95 },
  },
};

/** Requirements of downloaded wheels that pull more of the CUDA 12 stack (torch's pins). */
const WHEEL_REQUIREMENTS = {
  "torch==2.8.0": [
    "triton==3.4.0",
    "nvidia-cuda-runtime-cu12==12.8.90",
    "nvidia-cublas-cu12==12.8.4.1",
    "nvidia-cudnn-cu12==9.10.2.21",
    "nvidia-nccl-cu12==2.27.3",
  ],
};

/** The version pip would pick for a requirement. */
export function pickVersion(req) {
  if (req.op === "==" || req.op === "===") return req.version;
  return LATEST[normalizeName(req.name)] ?? req.version ?? "1.0.0";
}

/** `name-version-tag.whl` and its size text, e.g. `(887.9 MB)`. */
export function wheelFor(name, version) {
  const n = normalizeName(name);
  const info = WHEELS[n];
  const file = `${n.replace(/-/g, "_")}-${version}-${info?.tag ?? "py3-none-any"}.whl`;
  const mb = info?.mb?.[version] ?? null;
  return { file, mb };
}

/** Further requirements of a downloaded wheel (e.g. torch's CUDA 12 pins). */
export function wheelRequirements(name, version) {
  return WHEEL_REQUIREMENTS[`${normalizeName(name)}==${version}`] ?? [];
}

/**
 * Resolves the dependencies of `project` against the venv: which are satisfied and which pip
 * collects (with their own pins, breadth first). Pure: prints nothing.
 * @param {string[]} dependencies
 * @param {string} from e.g. `sglang==0.5.2`
 * @param {string} [root]
 */
export function resolve(dependencies, from, root) {
  /** @type {{ kind: "satisfied" | "collect"; req: NonNullable<ReturnType<typeof parseRequirement>>; from: string; installed: string | null; version: string }[]} */
  const steps = [];
  const seen = new Set();
  const queue = dependencies.map((text) => ({ text, from }));
  while (queue.length > 0) {
    const { text, from: parent } = /** @type {{ text: string; from: string }} */ (queue.shift());
    const req = parseRequirement(text);
    if (req === null) continue;
    const key = normalizeName(req.name);
    if (seen.has(key)) continue;
    seen.add(key);
    const installed = installedVersion(req.name, root);
    if (satisfies(installed, req.op, req.version)) {
      steps.push({
        kind: "satisfied",
        req,
        from: parent,
        installed,
        version: /** @type {string} */ (installed),
      });
      continue;
    }
    const version = pickVersion(req);
    steps.push({ kind: "collect", req, from: parent, installed, version });
    for (const sub of wheelRequirements(req.name, version))
      queue.push({ text: sub, from: `${req.name}==${version}->${parent}` });
  }
  return steps;
}
