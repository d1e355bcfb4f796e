import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEngineUpstream,
  createSimGpuHost,
  type EngineUpstream,
  makeEnginePatch,
  type SimGpuHost,
  type SimGpuHostOptions,
} from "../../testbench/gpu-host/index.ts";
import { tempDir } from "../support/tmp.ts";

const run = promisify(execFile);

let dir: { path: string; remove: () => Promise<void> };
let upstream: EngineUpstream;
let patch: string;
const hosts: SimGpuHost[] = [];

async function newHost(name: string, options: Partial<SimGpuHostOptions> = {}): Promise<SimGpuHost> {
  const host = await createSimGpuHost({
    root: join(dir.path, name),
    name,
    gpus: "8x-rtx-pro-6000-blackwell",
    ...options,
  });
  hosts.push(host);
  return host;
}

/** The bot's build sequence (issue #3), as one bash script run on the host. */
function buildScript(host: SimGpuHost, ref: string, patches: string[] = [], pipArgs = "--no-deps"): string {
  const src = host.engineSourceDir;
  return [
    "set -e",
    `[ -d ${src}/.git ] || git -C ${src} init -q`,
    `git -C ${src} fetch -q --depth 1 ${upstream.url} ${ref}`,
    `git -C ${src} checkout -q -f --detach FETCH_HEAD`,
    `git -C ${src} rev-parse HEAD`,
    ...patches.map((p) => `git -C ${src} apply ${p}`),
    `${host.venvDir}/bin/pip install -e ${src}/python ${pipArgs}`,
    `${host.venvDir}/bin/python -c "import sglang; print(sglang.__version__)"`,
    `${host.venvDir}/bin/python -m sglang.launch_server --help > ${dir.path}/help-${host.name}.txt`,
  ].join("\n");
}

beforeAll(async () => {
  dir = await tempDir("engine-build-");
  upstream = await createEngineUpstream(join(dir.path, "upstream"));
  patch = await makeEnginePatch(upstream.url, join(dir.path, "patches", "sm120.patch"));
});

afterAll(async () => {
  for (const host of hosts) await host.stop();
  await dir?.remove();
});

describe("engine upstream", () => {
  it("is a real bare repository with main and v0.5.2 as distinct commits, and stable shas", async () => {
    expect(upstream.url).toBe(`file://${join(dir.path, "upstream", "sglang.git")}`);
    const { stdout } = await run("git", ["ls-remote", upstream.url]);
    expect(stdout).toContain(`${upstream.commits.main}\trefs/heads/main`);
    expect(stdout).toContain(`${upstream.commits["v0.5.2"]}\trefs/tags/v0.5.2^{}`);
    expect(upstream.commits.main).not.toBe(upstream.commits["v0.5.2"]);
    const again = await createEngineUpstream(join(dir.path, "upstream-again"));
    expect(again.commits).toEqual(upstream.commits);

    const show = async (spec: string) =>
      (await run("git", ["--git-dir", upstream.path, "show", spec], { maxBuffer: 1 << 24 })).stdout;
    const pyproject = await show("main:python/pyproject.toml");
    expect(pyproject).toContain('name = "sglang"');
    expect(pyproject).toContain('version = "0.5.6.post1"');
    expect(pyproject).toContain('"torch==2.9.1"');
    expect(pyproject).toMatch(/"flashinfer_python==0\.5\.3"/);
    expect(await show("main:python/sglang/version.py")).toBe('__version__ = "0.5.6.post1"\n');
    expect(await show("main:python/sglang/srt/server_args.py")).toContain('"--fp4-gemm-backend"');
    expect(await show("v0.5.2:python/sglang/srt/server_args.py")).not.toContain("--fp4-gemm-backend");
    expect(await show("v0.5.2:python/sglang/version.py")).toBe('__version__ = "0.5.2"\n');
    expect(await show("main:python/sglang/__init__.py")).toContain("from sglang.version import __version__");
    expect(readFileSync(patch, "utf8")).toMatch(
      /^From [0-9a-f]{40} .*\nFrom: .*\nDate: .*\nSubject: \[PATCH\] Add SM120 support\n/,
    );
  });
});

describe("engine build through bash on the host", () => {
  let host: SimGpuHost;
  beforeAll(async () => {
    host = await newHost("builder");
  });

  it("starts with an older engine installed editable (0.5.5, plain files, no .git)", async () => {
    expect(host.venvDir).toBe(join(host.root, "opt", "venvs", "sglang"));
    expect(existsSync(join(host.engineSourceDir, ".git"))).toBe(false);
    expect(host.installedEngine()).toEqual({
      version: "0.5.5",
      projectDir: join(host.engineSourceDir, "python"),
      packageDir: join(host.engineSourceDir, "python", "sglang"),
    });
    const r = await host.exec(`${host.venvDir}/bin/python -c "import sglang; print(sglang.__version__)"`);
    expect(r).toEqual({ code: 0, stdout: "0.5.5\n", stderr: "" });
  });

  it("init, fetch main, checkout, rev-parse, apply a patch, pip install -e --no-deps, import check, --help", async () => {
    const r = await host.exec(buildScript(host, "main", [patch]));
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe(upstream.commits.main);
    expect(readFileSync(join(host.engineSourceDir, "README.md"), "utf8")).toContain("SM120 support");
    const src = join(host.engineSourceDir, "python");
    for (const line of [
      `Obtaining file://${src}`,
      "  Installing build dependencies: started",
      "  Installing build dependencies: finished with status 'done'",
      "  Checking if build backend supports build_editable: finished with status 'done'",
      "  Getting requirements to build editable: finished with status 'done'",
      "  Preparing editable metadata (pyproject.toml): finished with status 'done'",
      "Building wheels for collected packages: sglang",
      "  Building editable for sglang (pyproject.toml): finished with status 'done'",
      "Successfully built sglang",
      "Installing collected packages: sglang",
      "  Attempting uninstall: sglang",
      "    Found existing installation: sglang 0.5.5",
      "      Successfully uninstalled sglang-0.5.5",
      "Successfully installed sglang-0.5.6.post1",
    ]) {
      expect(lines, line).toContain(line);
    }
    expect(r.stdout).toMatch(
      / {2}Created wheel for sglang: filename=sglang-0\.5\.6\.post1-0\.editable-py3-none-any\.whl size=\d+ sha256=[0-9a-f]{64}\n/,
    );
    expect(r.stdout).not.toContain("Requirement already satisfied");
    expect(lines.at(-2)).toBe("0.5.6.post1");
    // The marker setuptools leaves: the only one, holding the project directory.
    expect(readdirSync(host.sitePackagesDir).filter((f) => f.startsWith("__editable__"))).toEqual([
      "__editable__.sglang-0.5.6.post1.pth",
    ]);
    expect(readFileSync(join(host.sitePackagesDir, "__editable__.sglang-0.5.6.post1.pth"), "utf8")).toBe(
      `${src}\n`,
    );
    expect(readFileSync(join(dir.path, "help-builder.txt"), "utf8")).toContain(
      "--fp4-gemm-backend {auto,flashinfer_cudnn,",
    );
    expect(host.cudaStack().replaced).toBe(false);
    const calls = (await host.calls()).filter((c) => c.cmd === "pip");
    expect(calls.at(-1)?.argv).toEqual(["install", "-e", src, "--no-deps"]);
  });

  it("fetching v0.5.2 gives an old engine: --help lacks --fp4-gemm-backend, and the server rejects it", async () => {
    const r = await host.exec(buildScript(host, "v0.5.2"));
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe(upstream.commits["v0.5.2"]);
    expect(r.stdout).toContain("Found existing installation: sglang 0.5.6.post1");
    expect(r.stdout.split("\n").at(-2)).toBe("0.5.2");
    const help = readFileSync(join(dir.path, "help-builder.txt"), "utf8");
    expect(help).toContain("--moe-runner-backend {auto,");
    expect(help).not.toContain("--fp4-gemm-backend");
    const server = await host.exec(
      `${host.venvDir}/bin/python -m sglang.launch_server --model-path /x --fp4-gemm-backend flashinfer_cudnn`,
    );
    expect(server.code).toBe(2);
    expect(server.stderr).toContain("error: unrecognized arguments: --fp4-gemm-backend flashinfer_cudnn");
  });

  it("pip -q is silent; pip --version, show, list, freeze and python -m pip describe the venv", async () => {
    const src = join(host.engineSourceDir, "python");
    const quiet = await host.exec(`${host.venvDir}/bin/pip install -q -e ${src} --no-deps`);
    expect(quiet).toEqual({ code: 0, stdout: "", stderr: "" });
    const version = await host.exec(`${host.venvDir}/bin/pip3 --version`);
    expect(version.stdout).toBe(`pip 24.0 from ${host.sitePackagesDir}/pip (python 3.12)\n`);
    const show = await host.exec(`${host.venvDir}/bin/python -m pip show sglang`);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(
      `Name: sglang\nVersion: 0.5.2\nSummary: SGLang is a fast serving framework for large language models and vision language models.\n`,
    );
    expect(show.stdout).toContain(
      `Location: ${host.sitePackagesDir}\nEditable project location: ${src}\nRequires: `,
    );
    const missing = await host.exec(`${host.venvDir}/bin/pip show vllm`);
    expect(missing).toMatchObject({ code: 1, stderr: "WARNING: Package(s) not found: vllm\n" });
    const list = (await host.exec(`${host.venvDir}/bin/pip list`)).stdout.split("\n");
    expect(list[0]).toMatch(/^Package +Version +Editable project location$/);
    expect(list[1]).toMatch(/^-+ -+ -+$/);
    expect(list).toContainEqual(expect.stringMatching(new RegExp(`^sglang +0\\.5\\.2 +${src}$`)));
    expect(list).toContainEqual(expect.stringMatching(/^torch +2\.9\.1\+cu130$/));
    const freeze = await host.exec(`${host.venvDir}/bin/pip freeze`);
    expect(freeze.stdout).toContain(`# Editable Git install with no remote (sglang==0.5.2)\n-e ${src}\n`);
    expect(freeze.stdout).toContain("torch==2.9.1+cu130\n");
  });
});

describe("pip without --no-deps, errors and faults", () => {
  it("without --no-deps, the engine's pins replace the host's CUDA stack, and that is recorded", async () => {
    const host = await newHost("clobbered");
    const r = await host.exec(buildScript(host, "v0.5.2", [], ""));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      `Requirement already satisfied: numpy in ${host.sitePackagesDir} (from sglang==0.5.2) (2.3.5)`,
    );
    expect(r.stdout).toContain("Collecting torch==2.8.0 (from sglang==0.5.2)");
    expect(r.stdout).toContain("Collecting triton==3.4.0 (from torch==2.8.0->sglang==0.5.2)");
    expect(r.stdout).toContain("Downloading torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl (887.9 MB)");
    expect(r.stdout).toContain(
      "  Attempting uninstall: torch\n    Found existing installation: torch 2.9.1+cu130\n    Uninstalling torch-2.9.1+cu130:\n      Successfully uninstalled torch-2.9.1+cu130\n",
    );
    expect(r.stdout).toMatch(
      /^Successfully installed .*sgl-kernel-0\.3\.9\.post2 sglang-0\.5\.2 torch-2\.8\.0 /m,
    );
    expect(r.stderr).toContain(
      "torchvision 0.24.1+cu130 requires torch==2.9.1, but you have torch 2.8.0 which is incompatible.",
    );
    const stack = host.cudaStack();
    expect(stack.replaced).toBe(true);
    expect(stack.by).toBe(`pip install -e ${host.engineSourceDir}/python`);
    expect(stack.changes).toContainEqual({ name: "torch", from: "2.9.1+cu130", to: "2.8.0" });
    const torch = await host.exec(
      `${host.venvDir}/bin/python -c "import torch; print(torch.__version__, torch.version.cuda)"`,
    );
    expect(torch.stdout).toBe("2.8.0 12.8\n");
    const fromFile = JSON.parse(readFileSync(join(host.stateDir, "cuda-stack.json"), "utf8"));
    expect(fromFile).toMatchObject({ replaced: true });
  });

  it("a directory without pyproject.toml or setup.py: pip's error, exit 1, nothing installed", async () => {
    const host = await newHost("noproject", { engine: "none" });
    const r = await host.exec(`${host.venvDir}/bin/pip install -e ${host.engineSourceDir}/python --no-deps`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`ERROR: ${host.engineSourceDir}/python is not a valid editable requirement.`);
    await host.exec(`mkdir -p ${host.engineSourceDir}/python`);
    const empty = await host.exec(
      `${host.venvDir}/bin/pip install -e ${host.engineSourceDir}/python --no-deps`,
    );
    expect(empty).toEqual({
      code: 1,
      stdout: `Obtaining file://${host.engineSourceDir}/python\n`,
      stderr: `ERROR: file://${host.engineSourceDir}/python does not appear to be a Python project: neither 'setup.py' nor 'pyproject.toml' found.\n`,
    });
    expect(host.installedEngine()).toBeNull();
  });

  it("engine none: no sglang until a checkout is installed", async () => {
    const host = await newHost("bare", { engine: "none" });
    expect(readdirSync(host.engineSourceDir)).toEqual([]);
    const imp = await host.exec(`${host.venvDir}/bin/python -c "import sglang"`);
    expect(imp.code).toBe(1);
    expect(imp.stderr).toContain("ModuleNotFoundError: No module named 'sglang'");
    const help = await host.exec(`${host.venvDir}/bin/python -m sglang.launch_server --help`);
    expect(help.code).toBe(1);
    expect(help.stderr).toBe(
      `${host.venvDir}/bin/python: Error while finding module specification for 'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')\n`,
    );
    const r = await host.exec(buildScript(host, "main"));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "Installing collected packages: sglang\nSuccessfully installed sglang-0.5.6.post1\n",
    );
    expect(host.installedEngine()?.version).toBe("0.5.6.post1");
  });

  it("fault pip { seconds }: the build takes that long and reports progress", async () => {
    const host = await newHost("slow");
    await host.setFault("pip", { seconds: 2 });
    const started = Date.now();
    const r = await host.exec(`${host.venvDir}/bin/pip install -e ${host.engineSourceDir}/python --no-deps`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "  Building editable for sglang (pyproject.toml): started\n  Building editable for sglang (pyproject.toml): still running...\n  Building editable for sglang (pyproject.toml): finished with status 'done'\n",
    );
  });

  it("fault pip { fail }: pip's build error box, exit 1, the old install kept", async () => {
    const host = await newHost("failing");
    await host.setFault("pip", { fail: "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1" });
    const r = await host.exec(
      `${host.venvDir}/bin/python -m pip install -e ${host.engineSourceDir}/python --no-deps`,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      "  Building editable for sglang (pyproject.toml): finished with status 'error'\nFailed to build sglang\n",
    );
    expect(r.stderr).toBe(
      [
        "  error: subprocess-exited-with-error",
        "  ",
        "  × Building editable for sglang (pyproject.toml) did not run successfully.",
        "  │ exit code: 1",
        "  ╰─> [1 lines of output]",
        "      error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1",
        "      [end of output]",
        "  ",
        "  note: This error originates from a subprocess, and is likely not a problem with pip.",
        "  ERROR: Failed building editable for sglang",
        "ERROR: Could not build wheels for sglang, which is required to install pyproject.toml-based projects",
        "",
      ].join("\n"),
    );
    expect(host.installedEngine()?.version).toBe("0.5.5");
  });
});

describe("preflight tools: df, free, the Hub CLI", () => {
  let host: SimGpuHost;
  beforeAll(async () => {
    host = await newHost("preflight", { engine: "none", hostMemGiB: 512 });
  });

  it("df is the real df, unless diskFreeBytes is set; then sandbox paths report it in df's format", async () => {
    const real = async (args: string) => (await host.exec(`/usr/bin/df ${args}`)).stdout;
    const shim = async (args: string) => (await host.exec(`df ${args}`)).stdout;
    const m = host.modelsDir;
    // The disk is shared with the rest of the suite, whose files come and go between two commands: a
    // comparison is made again (with the figures read anew) until both commands saw the same disk
    const agree = async (args: string, fault: boolean): Promise<[string, string]> => {
      let seen: [string, string] = ["", ""];
      for (let i = 0; i < 5; i++) {
        if (fault) {
          const avail = Number((await real(`-B1 --output=avail ${m}`)).split("\n")[1]);
          await host.setFault("diskFreeBytes", avail);
        }
        seen = [await shim(args), await real(args)];
        if (seen[0] === seen[1]) break;
      }
      return seen;
    };
    const [passed, direct] = await agree(`-h ${m}`, false);
    expect(passed).toBe(direct);
    const missing = await host.exec(`df ${m}/nope`);
    expect(missing).toEqual({ code: 1, stdout: "", stderr: `df: ${m}/nope: No such file or directory\n` });

    // The real numbers given back through the fault: the output must be the real one, byte for byte.
    for (const args of [
      "-h",
      "-hT",
      "-H",
      "-BG",
      "--output=source,fstype,size,used,avail,pcent,file,target -h",
    ]) {
      const [faked, direct] = await agree(`${args} ${m}`, true);
      expect(faked, args).toBe(direct);
    }

    await host.setFault("diskFreeBytes", 123_456_789);
    const size = (await real(`-B1 --output=size ${m}`)).split("\n")[1]?.trim() ?? "";
    const out = await shim(`-B1 --output=avail,size ${m} /proc`);
    const lines = out.split("\n");
    expect(lines[0]).toBe(`    Avail ${"1B-blocks".padStart(size.length)}`);
    expect(lines[1]).toBe(`123456789 ${size}`);
    expect(lines[2]).toMatch(/^ +\d+ +\d+$/); // /proc is outside the sandbox: real values
    const human = (await shim(`-h ${m}`)).split("\n")[1] ?? "";
    expect(human).toMatch(/^\S+ +\S+ +\S+ +118M +\d+% \/.*$/);
    await host.setFault("diskFreeBytes", null);
  });

  it("free reports hostMemGiB as the total in free's format; without it, it is the real free", async () => {
    const b = (await host.exec("free -b")).stdout.split("\n");
    expect(b[0]).toBe("               total        used        free      shared  buff/cache   available");
    expect(b[1]).toMatch(/^Mem: {5}549755813888 +\d+ +\d+ +\d+ +\d+ +\d+$/);
    expect(b[2]).toMatch(/^Swap: +\d+ +\d+ +\d+$/);
    expect((await host.exec("free -g")).stdout.split("\n")[1]).toMatch(/^Mem: {13}512 /);
    expect((await host.exec("free -h")).stdout.split("\n")[1]).toMatch(/^Mem: {11}512Gi /);
    const wide = (await host.exec("free -w -t")).stdout.split("\n");
    expect(wide[0]).toContain("     buffers       cache   available");
    expect(wide[3]).toMatch(/^Total: +536870912 /);
    const other = await newHost("realmem", { engine: "none" });
    const mine = (await other.exec("free -b")).stdout.split("\n")[1]?.split(/\s+/)[1];
    const theirs = (await other.exec("/usr/bin/free -b")).stdout.split("\n")[1]?.split(/\s+/)[1];
    expect(mine).toBe(theirs);
    expect((await other.exec("free -z")).code).toBe(1);
  });

  it("hubCli decides which Hugging Face CLIs exist", async () => {
    const found: Record<string, string> = {};
    for (const hubCli of ["hf", "huggingface-cli", "both", "none"] as const) {
      const h = await newHost(`cli-${hubCli}`, { engine: "none", hubCli });
      const r = await h.exec("command -v hf huggingface-cli");
      found[hubCli] = r.stdout.replaceAll(`${h.binDir}/`, "").trim().replace("\n", " ");
    }
    expect(found).toEqual({
      hf: "hf",
      "huggingface-cli": "huggingface-cli",
      both: "hf huggingface-cli",
      none: "",
    });
    expect((await host.exec("command -v hf")).stdout).toBe(`${host.binDir}/hf\n`);
  });
});
