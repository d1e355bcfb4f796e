/**
 * Imitates: `pip install --no-deps --no-build-isolation --target <dir> <vllm source checkout>` as vLLM's
 * setup.py builds it (vllm-project/vllm setup.py; docs.vllm.ai "GPU installation", "Set up using
 * Python-only build (without compilation)"):
 *
 *   - `VLLM_USE_PRECOMPILED=1`: no kernels are compiled. setup.py downloads the precompiled wheel of the
 *     commit (wheels.vllm.ai/<commit>/…, or of its merge-base with main) and takes its compiled
 *     extensions (`vllm/_C.abi3.so`, `vllm/_moe_C.abi3.so`, `vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so`, …)
 *     into the package it builds from the checkout's Python files. The sim copies the checkout's `vllm/`
 *     into `<dir>/vllm/` and writes stand-ins for those files.
 *   - Without it: the CUDA extensions are compiled with CMake and nvcc; the sim's host has no CUDA
 *     toolkit, so the build stops where torch.utils.cpp_extension does without one ("CUDA_HOME environment
 *     variable is not set"), as pip's subprocess error box, exit 1.
 *   - The version is setuptools-scm's (`vllm/_version.py`): SETUPTOOLS_SCM_PRETEND_VERSION when set, else
 *     for a checkout without tags (a depth-1 fetch) `0.1.dev1+g<sha7>` (setuptools-scm's "no tag" form:
 *     0.1.dev<distance>+g<node>).
 *   - `--target` writes only `<dir>`: the venv's packages are not changed (pip's --target option).
 * Faults (state/faults.json "pip"): { seconds: N } the build takes N seconds; { fail: "message" } it fails.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fault, sleep } from "./sandbox.mjs";

/** Whether `dir` is a vLLM source checkout (its setup.py and `vllm/` package). @param {string} dir */
export function isVllmSource(dir) {
  return existsSync(join(dir, "setup.py")) && existsSync(join(dir, "vllm", "__init__.py"));
}

/** The compiled extensions a precompiled wheel brings (vllm setup.py precompiled file list). */
const COMPILED = [
  "vllm/_C.abi3.so",
  "vllm/_moe_C.abi3.so",
  "vllm/_flashmla_C.abi3.so",
  "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
  "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so",
  "vllm/cumem_allocator.abi3.so",
];

/**
 * @param {string} source the checkout
 * @param {string} target --target
 * @param {{ info: (line: string) => void; error: (line: string) => void }} out
 * @returns {Promise<number>} pip's exit code
 */
export async function installVllmSource(source, target, out) {
  const sha = (() => {
    try {
      return execFileSync("git", ["-C", source, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    } catch {
      return "0000000000000000000000000000000000000000";
    }
  })();
  const version = process.env.SETUPTOOLS_SCM_PRETEND_VERSION ?? `0.1.dev1+g${sha.slice(0, 7)}`;
  const precompiled = process.env.VLLM_USE_PRECOMPILED === "1";
  const pipFault = /** @type {{ seconds?: number; fail?: string } | null} */ (fault("pip"));
  out.info(`Processing ${source}`);
  out.info("  Preparing metadata (pyproject.toml): started");
  out.info("  Preparing metadata (pyproject.toml): finished with status 'done'");
  out.info("Building wheels for collected packages: vllm");
  out.info("  Building wheel for vllm (pyproject.toml): started");
  if (!precompiled) {
    await sleep(200);
    out.error("  error: subprocess-exited-with-error");
    out.error("  ");
    out.error("  × Building wheel for vllm (pyproject.toml) did not run successfully.");
    out.error("  │ exit code: 1");
    out.error("  ╰─> [8 lines of output]");
    out.error("      running bdist_wheel");
    out.error("      running build");
    out.error("      running build_py");
    out.error("      running build_ext");
    out.error("      -- The CUDA compiler identification is unknown");
    out.error(
      "      OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
    );
    out.error("      [end of output]");
    out.error("  ");
    out.error("  note: This error originates from a subprocess, and is likely not a problem with pip.");
    out.error("  ERROR: Failed building wheel for vllm");
    out.error("ERROR: Failed to build installable wheels for some pyproject.toml based projects (vllm)");
    return 1;
  }
  const seconds = Number(pipFault?.seconds ?? 0);
  if (Number.isFinite(seconds) && seconds > 0) await sleep(seconds * 1000);
  if (typeof pipFault?.fail === "string") {
    out.error("  error: subprocess-exited-with-error");
    out.error(`  ${pipFault.fail}`);
    out.error("  ERROR: Failed building wheel for vllm");
    return 1;
  }
  // setup.py, precompiled: what it prints (its logger) while it fetches and unpacks the wheel
  out.info(
    `  Using precompiled wheel for commit ${sha} (https://wheels.vllm.ai/${sha}/vllm-1.0.0.dev-cp38-abi3-manylinux1_x86_64.whl)`,
  );
  out.info("  Extracting precompiled files from the wheel");
  out.info("  Building wheel for vllm (pyproject.toml): finished with status 'done'");
  out.info(`  Created wheel for vllm: filename=vllm-${version}-cp38-abi3-linux_x86_64.whl`);
  out.info("Successfully built vllm");
  out.info("Installing collected packages: vllm");
  const pkg = join(target, "vllm");
  rmSync(pkg, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  cpSync(join(source, "vllm"), pkg, { recursive: true });
  writeFileSync(join(pkg, "_version.py"), `__version__ = version = "${version}"\n`);
  for (const file of COMPILED) {
    mkdirSync(join(target, file, ".."), { recursive: true });
    writeFileSync(
      join(target, file),
      `simulated compiled extension of vllm ${version} (${sha.slice(0, 12)})\n`,
    );
  }
  const info = join(target, `vllm-${version}.dist-info`);
  mkdirSync(info, { recursive: true });
  writeFileSync(join(info, "METADATA"), `Metadata-Version: 2.4\nName: vllm\nVersion: ${version}\n`);
  writeFileSync(join(info, "INSTALLER"), "pip\n");
  writeFileSync(join(info, "entry_points.txt"), "[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n");
  writeFileSync(join(info, "RECORD"), "vllm/__init__.py,,\n");
  out.info(`Successfully installed vllm-${version}`);
  return 0;
}
