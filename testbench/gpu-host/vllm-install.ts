import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { sandboxPaths } from "./shims/sandbox.mjs";
import { installedVersion, recordPackageChanges } from "./shims/venv.mjs";
import { shimScriptPath, writeShimWrapper } from "./write-shim-wrapper.ts";

/** The vLLM version the simulated vLLM models by default (testbench/gpu-host/VLLM.md). */
export const VLLM_DEFAULT_VERSION = "0.18.0";

/**
 * Installs the simulated vLLM into a sandbox's venv as `pip install vllm==<version>` leaves a wheel:
 * `<site-packages>/vllm/` (an `__init__.py` with `__version__`), `vllm-<version>.dist-info/` (METADATA,
 * INSTALLER, RECORD, entry_points.txt naming the `vllm` console script) and the console script
 * `<venv>/bin/vllm` (a shim wrapper → shims/vllm.mjs, like the venv's python and pip). The package is
 * recorded in the venv's package state (state/cuda-stack.json `packages`), so `python -c "import vllm;
 * print(vllm.__version__)"`, `python -m vllm.entrypoints.openai.api_server` and pip see it.
 */
export async function installVllm(root: string, opts: { version?: string } = {}): Promise<void> {
  const version = opts.version ?? VLLM_DEFAULT_VERSION;
  const paths = sandboxPaths(root);
  const previous = installedVersion("vllm", root);
  await removeVllmFiles(root);
  const pkg = join(paths.sitePackagesDir, "vllm");
  await mkdir(pkg, { recursive: true });
  await writeFile(
    join(pkg, "__init__.py"),
    `"""vLLM: a high-throughput and memory-efficient inference engine for LLMs (simulated)."""\n\n__version__ = "${version}"\n`,
  );
  const info = join(paths.sitePackagesDir, `vllm-${version}.dist-info`);
  await mkdir(info, { recursive: true });
  await writeFile(
    join(info, "METADATA"),
    [
      "Metadata-Version: 2.4",
      "Name: vllm",
      `Version: ${version}`,
      "Summary: A high-throughput and memory-efficient inference and serving engine for LLMs",
      "License-Expression: Apache-2.0",
      "Requires-Python: <3.14,>=3.10",
      "",
    ].join("\n"),
  );
  await writeFile(join(info, "INSTALLER"), "pip\n");
  await writeFile(
    join(info, "entry_points.txt"),
    "[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n",
  );
  await writeFile(
    join(info, "RECORD"),
    [`vllm/__init__.py,,`, `vllm-${version}.dist-info/METADATA,,`, `../../../bin/vllm,,`, ""].join("\n"),
  );
  await writeShimWrapper(join(paths.venvDir, "bin", "vllm"), shimScriptPath("vllm"), root);
  recordPackageChanges([{ name: "vllm", from: previous, to: version }], `pip install vllm==${version}`, root);
}

/** Removes the simulated vLLM (package, dist-info, console script) as `pip uninstall vllm` would. */
export async function uninstallVllm(root: string): Promise<void> {
  const previous = installedVersion("vllm", root);
  await removeVllmFiles(root);
  if (previous !== null)
    recordPackageChanges([{ name: "vllm", from: previous, to: null }], "pip uninstall -y vllm", root);
}

async function removeVllmFiles(root: string): Promise<void> {
  const paths = sandboxPaths(root);
  const previous = installedVersion("vllm", root);
  await rm(join(paths.sitePackagesDir, "vllm"), { recursive: true, force: true });
  if (previous !== null)
    await rm(join(paths.sitePackagesDir, `vllm-${previous}.dist-info`), { recursive: true, force: true });
  await rm(join(paths.venvDir, "bin", "vllm"), { force: true });
}
