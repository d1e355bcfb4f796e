import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { EngineRefSpec } from "./engine-tree.ts";
import { createEngineUpstream, type EngineUpstream } from "./engine-upstream.ts";

/*
 * The simulated vLLM upstream: a real bare git repository `<dir>/vllm.git` laid out as
 * vllm-project/vllm is (setup.py, pyproject.toml with setuptools-scm writing vllm/_version.py,
 * requirements/, the `vllm/` package), one commit per ref. Each tree's vllm/engine/arg_utils.py lists
 * the EngineArgs fields of that release; the simulated vLLM built from it (shims/vllm-build.mjs) has a
 * `vllm serve` flag only when its field is there (shims/vllm-host.mjs omittedFlags): v0.17.1 has no
 * `shutdown_timeout` (vllm PR #34730/#36666 landed for 0.18.0).
 */

/** v0.17.1 (no --shutdown-timeout), v0.18.0 (the sim's default version), and main after it. */
export const DEFAULT_VLLM_REFS: readonly EngineRefSpec[] = [
  { ref: "v0.17.1", version: "0.17.1", omitFlags: ["--shutdown-timeout"], message: "Release v0.17.1" },
  { ref: "v0.18.0", version: "0.18.0", message: "Release v0.18.0" },
  {
    ref: "main",
    version: "0.18.1.dev",
    message: "[Core] Keep --shutdown-timeout's drain for requests in flight",
  },
];

/** EngineArgs fields the sim's flags follow (vllm/engine/arg_utils.py), and the flag each brings. */
const FIELDS: { field: string; line: string; flag?: string }[] = [
  { field: "model", line: "    model: str = ModelConfig.model" },
  {
    field: "tensor_parallel_size",
    line: "    tensor_parallel_size: int = ParallelConfig.tensor_parallel_size",
  },
  {
    field: "gpu_memory_utilization",
    line: "    gpu_memory_utilization: float = CacheConfig.gpu_memory_utilization",
  },
  { field: "enable_sleep_mode", line: "    enable_sleep_mode: bool = ModelConfig.enable_sleep_mode" },
  {
    field: "shutdown_timeout",
    line: "    shutdown_timeout: int = VllmConfig.shutdown_timeout",
    flag: "--shutdown-timeout",
  },
];

async function put(dir: string, path: string, text: string): Promise<void> {
  await mkdir(dirname(join(dir, path)), { recursive: true });
  await writeFile(join(dir, path), text);
}

/** One vLLM source tree (the files a build and the sim read; the rest of the real tree is not needed). */
export async function writeVllmTree(dir: string, spec: EngineRefSpec): Promise<void> {
  const omit = new Set(spec.omitFlags ?? []);
  const fields = FIELDS.filter((f) => f.flag === undefined || !omit.has(f.flag));
  await put(
    dir,
    "pyproject.toml",
    [
      "[build-system]",
      'requires = ["cmake>=3.26.1", "ninja", "packaging>=24.2", "setuptools>=77.0.3,<80.0.0", "setuptools-scm>=8.0", "torch == 2.9.0", "wheel", "jinja2"]',
      'build-backend = "setuptools.build_meta"',
      "",
      "[project]",
      'name = "vllm"',
      'dynamic = ["version", "dependencies", "optional-dependencies"]',
      'requires-python = ">=3.10,<3.14"',
      "",
      "[tool.setuptools_scm]",
      "# no need for version_file, setup.py writes vllm/_version.py",
      "",
    ].join("\n"),
  );
  await put(
    dir,
    "setup.py",
    [
      "# SPDX-License-Identifier: Apache-2.0",
      "# (simulated) vLLM's build: VLLM_USE_PRECOMPILED=1 takes the compiled extensions of this commit's",
      "# precompiled wheel; otherwise CMake builds them with nvcc (testbench/gpu-host/shims/vllm-build.mjs).",
      "from setuptools import setup",
      "from setuptools_scm import get_version",
      "",
      'setup(version=get_version(write_to="vllm/_version.py"))',
      "",
    ].join("\n"),
  );
  await put(
    dir,
    "requirements/cuda.txt",
    "-r common.txt\ntorch==2.9.0\ntorchvision==0.24.0\nflashinfer-python==0.5.2\n",
  );
  await put(
    dir,
    "requirements/common.txt",
    "transformers >= 4.56.0\nfastapi[standard] >= 0.115.0\nopenai >= 1.99.1\n",
  );
  await put(
    dir,
    "vllm/__init__.py",
    '"""vLLM: a high-throughput and memory-efficient inference engine for LLMs"""\n\nfrom .version import __version__\n',
  );
  await put(
    dir,
    "vllm/version.py",
    'try:\n    from ._version import __version__\nexcept Exception:\n    __version__ = "dev"\n',
  );
  await put(
    dir,
    "vllm/engine/arg_utils.py",
    [
      "# SPDX-License-Identifier: Apache-2.0",
      "@dataclass",
      "class EngineArgs:",
      '    """Arguments for vLLM engine."""',
      ...fields.map((f) => f.line),
      "",
    ].join("\n"),
  );
  await put(dir, "README.md", `# vLLM ${spec.version}\n\nEasy, fast, and cheap LLM serving for everyone.\n`);
}

/** Creates the simulated vLLM upstream (`file://<dir>/vllm.git`) with these refs. */
export async function createVllmUpstream(
  dir: string,
  refs: readonly EngineRefSpec[] = DEFAULT_VLLM_REFS,
): Promise<EngineUpstream> {
  return await createEngineUpstream(dir, refs, { name: "vllm.git", write: writeVllmTree });
}
