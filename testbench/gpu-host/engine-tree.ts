import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { renderServerArgsPy } from "./shims/sglang-flags.mjs";

/** One version of the simulated SGLang source tree (a branch or tag of the engine upstream). */
export interface EngineRefSpec {
  /** Branch or tag name: `main`, `v0.5.2`. */
  ref: string;
  /** An annotated tag rather than a branch (default: true for names like `v1.2.3`). */
  tag?: boolean;
  /** `__version__` (python/sglang/version.py) and the pyproject version. */
  version: string;
  /** Flags this engine's server_args.py lacks, e.g. `["--fp4-gemm-backend"]` for an older engine. */
  omitFlags?: string[];
  /** Flags it declares beyond the built-in list. */
  addFlags?: string[];
  /** `[project] dependencies` of python/pyproject.toml (default: the pins of `main`). */
  dependencies?: string[];
  /** Extra or replaced files: path in the repository → content. */
  files?: Record<string, string>;
  /** Commit subject. */
  message?: string;
}

/** The pins of upstream main (0.5.6.post1): torch 2.9.1, sgl-kernel 0.3.19, FlashInfer 0.5.3. */
export const MAIN_DEPENDENCIES = [
  "aiohttp",
  "requests",
  "tqdm",
  "numpy",
  "fastapi",
  "uvicorn",
  "uvloop",
  "orjson",
  "packaging",
  "psutil",
  "pydantic",
  "pyzmq>=25.1.2",
  "sentencepiece",
  "setuptools",
  "huggingface_hub",
  "safetensors",
  "transformers==4.57.1",
  "xgrammar==0.1.27",
  "torch==2.9.1",
  "torchaudio==2.9.1",
  "torchvision",
  "sgl-kernel==0.3.19",
  "flashinfer_python==0.5.3",
  "flashinfer_cubin==0.5.3",
  "nvidia-cutlass-dsl==4.2.1",
];

/** The pins of v0.5.2: torch 2.8.0, sgl-kernel 0.3.9.post2, FlashInfer 0.3.1. */
export const V0_5_2_DEPENDENCIES = MAIN_DEPENDENCIES.map((dep) => {
  const old: Record<string, string> = {
    "transformers==4.57.1": "transformers==4.56.1",
    "xgrammar==0.1.27": "xgrammar==0.1.24",
    "torch==2.9.1": "torch==2.8.0",
    "torchaudio==2.9.1": "torchaudio==2.8.0",
    "sgl-kernel==0.3.19": "sgl-kernel==0.3.9.post2",
    "flashinfer_python==0.5.3": "flashinfer_python==0.3.1",
    "flashinfer_cubin==0.5.3": "flashinfer_cubin==0.3.1",
    "nvidia-cutlass-dsl==4.2.1": "nvidia-cutlass-dsl==4.1.0",
  };
  return old[dep] ?? dep;
});

/** Tag v0.5.2: an older engine, without `--fp4-gemm-backend`. */
export const ENGINE_V0_5_2: EngineRefSpec = {
  ref: "v0.5.2",
  tag: true,
  version: "0.5.2",
  omitFlags: ["--fp4-gemm-backend"],
  dependencies: V0_5_2_DEPENDENCIES,
  message: "Release v0.5.2",
};

/** Branch main: current upstream flags (with `--fp4-gemm-backend`), version 0.5.6.post1. */
export const ENGINE_MAIN: EngineRefSpec = {
  ref: "main",
  version: "0.5.6.post1",
  dependencies: MAIN_DEPENDENCIES,
  message: "Add --fp4-gemm-backend (flashinfer_cudnn, flashinfer_cutlass, flashinfer_trtllm)",
};

/**
 * What `createSimGpuHost` installs by default (`engine: "preinstalled"`): an engine older than main
 * (0.5.5) that already has every current flag, installed from plain files (no git history).
 */
export const ENGINE_PREINSTALLED: EngineRefSpec = {
  ref: "v0.5.5",
  tag: true,
  version: "0.5.5",
  dependencies: MAIN_DEPENDENCIES,
  message: "Release v0.5.5",
};

/** The default refs of an engine upstream, oldest first (each commit is the next one's parent). */
export const DEFAULT_ENGINE_REFS: readonly EngineRefSpec[] = [ENGINE_V0_5_2, ENGINE_MAIN];

const SUMMARY = "SGLang is a fast serving framework for large language models and vision language models.";

function pyprojectToml(spec: EngineRefSpec): string {
  const deps = (spec.dependencies ?? MAIN_DEPENDENCIES).map((d) => `  ${JSON.stringify(d)},`);
  return [
    "[build-system]",
    'requires = ["setuptools>=61.0", "wheel"]',
    'build-backend = "setuptools.build_meta"',
    "",
    "[project]",
    'name = "sglang"',
    `version = "${spec.version}"`,
    `description = "${SUMMARY}"`,
    'readme = "README.md"',
    'requires-python = ">=3.10"',
    'license = { file = "LICENSE" }',
    "classifiers = [",
    '  "Programming Language :: Python :: 3",',
    '  "License :: OSI Approved :: Apache Software License",',
    "]",
    "dependencies = [",
    ...deps,
    "]",
    "",
    "[project.optional-dependencies]",
    'test = ["pytest", "expecttest"]',
    "",
    "[project.urls]",
    '"Homepage" = "https://github.com/sgl-project/sglang"',
    '"Bug Tracker" = "https://github.com/sgl-project/sglang/issues"',
    "",
    "[tool.setuptools.package-data]",
    '"sglang" = ["srt/layers/moe/fused_moe_triton/configs/*/*.json"]',
    "",
    "[tool.setuptools.packages.find]",
    'exclude = ["assets*", "benchmark*", "docs*", "dist*", "playground*", "scripts*", "tests*"]',
    "",
  ].join("\n");
}

function readme(spec: EngineRefSpec): string {
  return [
    '<div align="center" id="sglangtop">',
    '<img src="https://raw.githubusercontent.com/sgl-project/sglang/main/assets/logo.png" alt="logo" width="400" margin="10px"></img>',
    "</div>",
    "",
    "--------------------------------------------------------------------------------",
    "",
    "## About",
    `SGLang is a high-performance serving framework for large language models and vision-language models (this tree: ${spec.version}).`,
    "",
    "## Getting Started",
    "- [Install SGLang](https://docs.sglang.ai/get_started/install.html)",
    "- [Quick Start](https://docs.sglang.ai/basic_usage/send_request.html)",
    "- [Backend Tutorial](https://docs.sglang.ai/basic_usage/openai_api_completions.html)",
    "",
    "## Hardware support",
    "- NVIDIA: sm_80, sm_89, sm_90, sm_100",
    "",
  ].join("\n");
}

const INIT_PY = [
  "# SGLang public APIs",
  "",
  "from sglang.version import __version__",
  "",
  '__all__ = ["__version__"]',
  "",
].join("\n");

const LAUNCH_SERVER_PY = [
  '"""Launch the inference server."""',
  "",
  "import os",
  "import sys",
  "",
  "from sglang.srt.server_args import prepare_server_args",
  "from sglang.srt.utils import kill_process_tree",
  "",
  'if __name__ == "__main__":',
  "    server_args = prepare_server_args(sys.argv[1:])",
  "",
  "    try:",
  "        from sglang.srt.entrypoints.http_server import launch_server",
  "",
  "        launch_server(server_args)",
  "    finally:",
  "        kill_process_tree(os.getpid(), include_parent=False)",
  "",
].join("\n");

/** Every file of the engine tree for `spec`: path in the repository → content. */
export function engineTreeFiles(spec: EngineRefSpec): Record<string, string> {
  return {
    "README.md": readme(spec),
    LICENSE:
      "                                 Apache License\n                           Version 2.0, January 2004\n",
    "python/pyproject.toml": pyprojectToml(spec),
    "python/sglang/__init__.py": INIT_PY,
    "python/sglang/version.py": `__version__ = "${spec.version}"\n`,
    "python/sglang/launch_server.py": LAUNCH_SERVER_PY,
    "python/sglang/srt/__init__.py": "",
    "python/sglang/srt/server_args.py": renderServerArgsPy({
      omit: spec.omitFlags ?? [],
      add: spec.addFlags ?? [],
    }),
    ...spec.files,
  };
}

/** Writes the engine tree for `spec` into `dir` (existing files are overwritten, others kept). */
export async function writeEngineTree(dir: string, spec: EngineRefSpec): Promise<void> {
  for (const [path, content] of Object.entries(engineTreeFiles(spec))) {
    const file = join(dir, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
  }
}

/** The metadata pip records for an installed engine tree (`requires` = dependency names). */
export function engineDistribution(spec: EngineRefSpec): {
  name: string;
  version: string;
  summary: string;
  license: string;
  requires: string[];
} {
  return {
    name: "sglang",
    version: spec.version,
    summary: SUMMARY,
    license: "Apache-2.0",
    requires: spec.dependencies ?? MAIN_DEPENDENCIES,
  };
}
