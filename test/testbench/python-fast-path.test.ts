import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pythonFastPath, SGLANG_VERSION_CODE } from "../../testbench/gpu-host/python-fast-path.ts";
import { sandboxPaths, writeJsonAtomic } from "../../testbench/gpu-host/shims/sandbox.mjs";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers `python --version` and the engine build's `python -c 'import sglang;
 * print(sglang.__version__)'` in the venv python's shell wrapper (testbench/gpu-host/python-fast-path.ts).
 * Both are asked about the same venvs and engine trees and must agree byte for byte and in exit code; the
 * fast answer must not start Node (its wrapper points at a script that does not exist), and every case it
 * does not know must reach Node.
 */
let root: string;
let fast: string;
let site: string;

const answer = (command: string, args: string[], pythonPath = "") =>
  shimAnswer(root, command, args, { PYTHONPATH: pythonPath });

/** An engine project directory holding sglang/version.py with `text`. */
async function project(name: string, text: string | null): Promise<string> {
  const dir = join(root, "src", name);
  await mkdir(join(dir, "sglang"), { recursive: true });
  if (text !== null) await writeFile(join(dir, "sglang", "version.py"), text);
  return dir;
}

/** Leaves exactly the editable-install markers given (file name → text) in site-packages. */
async function markers(files: Record<string, string>): Promise<void> {
  await rm(site, { recursive: true, force: true });
  await mkdir(site, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(site, name), text);
}

const same = async (args: string[], pythonPath = "") => {
  const slow = await answer(process.execPath, [shimScriptPath("python"), ...args], pythonPath);
  const quick = await answer(fast, args, pythonPath);
  expect(quick, `${args.join(" ")} (PYTHONPATH=${pythonPath})`).toEqual(slow);
  expect(quick.code).toBe(0);
  return quick.out;
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "python-fast-path-"));
  site = sandboxPaths(root).sitePackagesDir;
  await mkdir(join(root, "state"), { recursive: true });
  writeJsonAtomic(join(root, "state", "config.json"), { name: "gpu-1", gpus: "8x-h200" });
  writeJsonAtomic(join(root, "state", "faults.json"), {});
  fast = join(root, "opt", "venvs", "sglang", "bin", "python");
  // the fast path in front of a script that does not exist: only an answer the shell gave itself succeeds
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, pythonFastPath(root));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("python answered by the shell", () => {
  it("--version and -V: the same line as the Node shim", async () => {
    expect(await same(["--version"])).toBe("Python 3.12.3\n");
    await same(["-V"]);
  });

  it("the import check finds the venv's editable install, as the Node shim does", async () => {
    const installed = await project("installed", '__version__ = "0.5.5"\n');
    await markers({ "__editable__.sglang-0.5.5.pth": `${installed}\n` });
    expect(await same(["-c", SGLANG_VERSION_CODE])).toBe("0.5.5\n");
    // comments, blank lines and an import line before the directory; another distribution's marker
    const other = await project("other", "__version__ = 'x'\n");
    await markers({
      "__editable__.SGLang-0.5.6.pth": `# written by pip\n\n  import _editable_finder; x()\n \t${installed}  \n`,
      "__editable__.flashinfer_python-0.4.pth": `${other}\n`,
      "distutils-precedence.pth": "import os\n",
    });
    await same(["-c", SGLANG_VERSION_CODE]);
  });

  it("a PYTHONPATH directory holding sglang/ comes first (the build's check)", async () => {
    const installed = await project("installed", '__version__ = "0.5.5"\n');
    await markers({ "__editable__.sglang-0.5.5.pth": `${installed}\n` });
    const build = await project(
      "build/python",
      '# generated\n__version__ =\n  "0.5.9.dev12+g0d05226"\nx = "y"\n',
    );
    expect(await same(["-c", SGLANG_VERSION_CODE], build)).toBe("0.5.9.dev12+g0d05226\n");
    const empty = join(root, "src", "empty");
    await mkdir(empty, { recursive: true });
    await same(["-c", SGLANG_VERSION_CODE], `::${empty}:${build}:${installed}`);
    await same(["-c", SGLANG_VERSION_CODE], `${empty}:`);
    const quoted = await project("quoted", "__version__='1.0'  # single quotes\n");
    expect(await same(["-c", SGLANG_VERSION_CODE], quoted)).toBe("1.0\n");
  });

  it("records each call where the bench counts calls", async () => {
    await answer(fast, ["-c", SGLANG_VERSION_CODE]);
    await answer(fast, ["--version"]);
    const lines = (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n");
    expect(JSON.parse(lines.at(-2)!)).toMatchObject({ cmd: "python", argv: ["-c", SGLANG_VERSION_CODE] });
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ cmd: "python", argv: ["--version"] });
  });

  it("leaves every other case to the Node shim", async () => {
    const installed = await project("installed", '__version__ = "0.5.5"\n');
    const plain = { "__editable__.sglang-0.5.5.pth": `${installed}\n` };
    const cases: Array<[string, Record<string, string>, string, string[], Record<string, unknown>?]> = [
      ["another snippet", plain, "", ["-c", "import sglang; print(sglang.__file__)"]],
      ["other spacing", plain, "", ["-c", "import sglang;print(sglang.__version__)"]],
      ["more arguments", plain, "", ["--version", "-c", "x"]],
      ["a module", plain, "", ["-m", "sglang.launch_server", "--help"]],
      ["the slow-import fault", plain, "", ["-c", SGLANG_VERSION_CODE], { import: { seconds: 0.1 } }],
      ["no sglang installed", {}, "", ["-c", SGLANG_VERSION_CODE]],
      [
        "two sglang markers",
        { ...plain, "__editable__.sglang-0.5.6.pth": `${installed}\n` },
        "",
        ["-c", SGLANG_VERSION_CODE],
      ],
      [
        "a relative project directory",
        { "__editable__.sglang-1.pth": "src/installed\n" },
        "",
        ["-c", SGLANG_VERSION_CODE],
      ],
      [
        "a project directory with ..",
        { "__editable__.sglang-1.pth": `${installed}/../installed\n` },
        "",
        ["-c", SGLANG_VERSION_CODE],
      ],
      [
        "a marker naming nothing",
        { "__editable__.sglang-1.pth": "# nothing\n" },
        "",
        ["-c", SGLANG_VERSION_CODE],
      ],
      ["PYTHONPATH with ..", plain, `${installed}/../installed`, ["-c", SGLANG_VERSION_CODE]],
    ];
    for (const [what, files, pythonPath, args, faults] of cases) {
      await markers(files);
      writeJsonAtomic(join(root, "state", "faults.json"), faults ?? {});
      const result = await answer(fast, args, pythonPath);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, what).not.toBe(0);
      expect(result.out, what).toBe("");
    }
    writeJsonAtomic(join(root, "state", "faults.json"), {});
    await markers(plain);
    for (const [what, text] of [
      ["no __version__", "VERSION = '1'\n"],
      ["a version.py in UTF-8", '# © 2026\n__version__ = "1.0"\n'],
    ] as const) {
      const build = await project(`odd-${what.length}`, text);
      const result = await answer(fast, ["-c", SGLANG_VERSION_CODE], build);
      expect(result.code, what).not.toBe(0);
    }
    const noVersionFile = await project("no-version-file", null);
    expect((await answer(fast, ["-c", SGLANG_VERSION_CODE], noVersionFile)).code).not.toBe(0);
  });
});
