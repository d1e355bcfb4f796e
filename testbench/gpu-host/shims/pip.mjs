/**
 * Imitates: `pip` 24.0 of the host's venv (`<venv>/bin/pip`, `<venv>/bin/pip3`, `python -m pip`):
 *   pip install -e <dir> [--no-deps] [-q] ...   editable install of a pyproject.toml project:
 *       pip's output (non-interactive "…: started" / "…: finished with status 'done'" lines when
 *       stdout is not a terminal, "… ... done" when it is), then the setuptools editable marker
 *       `<venv>/lib/python3.12/site-packages/__editable__.<name>-<version>.pth` (holding <dir>)
 *       and its dist-info; older installs of the same project are removed. Without --no-deps the
 *       pyproject's pins are resolved against the venv and whatever differs is "downloaded" and
 *       replaces the host's CUDA 13 stack (recorded in state/cuda-stack.json).
 *   pip install --no-deps --no-build-isolation --target <dir> <vllm checkout>   vLLM of that checkout
 *       built into <dir> alone (vllm-build.mjs: precompiled kernels with VLLM_USE_PRECOMPILED=1)
 *   pip install <name>...   "Requirement already satisfied" or "No matching distribution"
 *   pip uninstall [-y] <name>..., pip show <name>..., pip list [--format=json] [-e], pip freeze,
 *   pip --version
 * Faults (state/faults.json "pip"): { seconds: N } the build takes N seconds (printing progress),
 * { fail: "message" } the editable build fails with pip's subprocess error box, exit 1.
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve as resolvePath } from "node:path";
import { parsePyproject, resolve as resolveDeps, wheelFor } from "./pip-resolve.mjs";
import { fault, recordCall, sandboxPaths, sleep } from "./sandbox.mjs";
import {
  editableInstall,
  editableInstalls,
  editableMetadata,
  installedPackages,
  installedVersion,
  normalizeName,
  recordPackageChanges,
  removeEditableInstall,
  writeEditableInstall,
} from "./venv.mjs";
import { installVllmSource, isVllmSource } from "./vllm-build.mjs";

const VERSION = "24.0";
const argv = process.argv.slice(2);
recordCall("pip", argv);
const paths = sandboxPaths();
const SITE = paths.sitePackagesDir;
const TTY = process.stdout.isTTY === true;
let quiet = 0;
// `pip list | head`: a closed pipe ends pip quietly.
process.stdout.on("error", (err) => {
  if (/** @type {NodeJS.ErrnoException} */ (err).code === "EPIPE") process.exit(0);
  throw err;
});

/** @param {string} line */
const info = (line) => {
  if (quiet === 0) process.stdout.write(`${line}\n`);
};
/** @param {string} line */
const error = (line) => process.stderr.write(`${line}\n`);

class PipExit extends Error {
  /** @param {number} code */
  constructor(code) {
    super(`exit ${code}`);
    this.code = code;
  }
}

const USAGES = {
  install: [
    "pip install [options] <requirement specifier> [package-index-options] ...",
    "pip install [options] -r <requirements file> [package-index-options] ...",
    "pip install [options] [-e] <vcs project url> ...",
    "pip install [options] [-e] <local project path> ...",
    "pip install [options] <archive url/path> ...",
  ],
  uninstall: ["pip uninstall [options] <package> ...", "pip uninstall [options] -r <requirements file> ..."],
  show: ["pip show [options] <package> ..."],
  list: ["pip list [options]"],
  freeze: ["pip freeze [options]"],
};

/** optparse's error: usage, blank line, message; exit 2. @param {string} command @param {string} message */
function optionError(command, message) {
  const usage = USAGES[command] ?? ["pip <command> [options]"];
  process.stderr.write(`\nUsage:   \n${usage.map((u) => `  ${u}`).join("\n")}\n\n${message}\n`);
  throw new PipExit(2);
}

const GENERAL_HELP = `
Usage:   
  pip <command> [options]

Commands:
  install                     Install packages.
  download                    Download packages.
  uninstall                   Uninstall packages.
  freeze                      Output installed packages in requirements format.
  inspect                     Inspect the python environment.
  list                        List installed packages.
  show                        Show information about installed packages.
  check                       Verify installed packages have compatible dependencies.
  config                      Manage local and global configuration.
  search                      Search PyPI for packages.
  cache                       Inspect and manage pip's wheel cache.
  index                       Inspect information available from package indexes.
  wheel                       Build wheels from your requirements.
  hash                        Compute hashes of package archives.
  completion                  A helper command used for command completion.
  debug                       Show information useful for debugging.
  help                        Show help for commands.

General Options:
  -h, --help                  Show help.
  -v, --verbose               Give more output. Option is additive, and can be
                              used up to 3 times.
  -V, --version               Show version and exit.
  -q, --quiet                 Give less output. Option is additive, and can be
                              used up to 3 times (corresponding to WARNING,
                              ERROR, and CRITICAL logging levels).
`;

/** Options that take a value (any command). */
const VALUE_OPTIONS = new Set([
  "-e",
  "--editable",
  "-r",
  "--requirement",
  "-c",
  "--constraint",
  "-i",
  "--index-url",
  "--extra-index-url",
  "-f",
  "--find-links",
  "-t",
  "--target",
  "--prefix",
  "--root",
  "--root-user-action",
  "--cache-dir",
  "--progress-bar",
  "--upgrade-strategy",
  "--config-settings",
  "-C",
  "--format",
  "--log",
  "--timeout",
  "--retries",
  "--exclude",
]);

const FLAG_OPTIONS = new Set([
  "--no-deps",
  "-U",
  "--upgrade",
  "--force-reinstall",
  "-I",
  "--ignore-installed",
  "--no-build-isolation",
  "--no-cache-dir",
  "--user",
  "--pre",
  "--no-index",
  "--disable-pip-version-check",
  "--no-warn-script-location",
  "--no-warn-conflicts",
  "--no-input",
  "--isolated",
  "--no-color",
  "--break-system-packages",
  "--no-python-version-warning",
  "-y",
  "--yes",
  "-e",
  "--editable",
  "-l",
  "--local",
  "--all",
  "--outdated",
  "--uptodate",
  "--not-required",
  "--require-virtualenv",
]);

/**
 * Splits argv into the command, its options and positionals.
 * @returns {{ command: string | null; opts: Map<string, string[]>; args: string[] }}
 */
function parseCommandLine(args) {
  /** @type {Map<string, string[]>} */
  const opts = new Map();
  const positionals = [];
  let command = null;
  const add = (key, value) => opts.set(key, [...(opts.get(key) ?? []), value]);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (/^-q+$/.test(arg) || arg === "--quiet") {
      quiet += arg === "--quiet" ? 1 : arg.length - 1;
      continue;
    }
    if (/^-v+$/.test(arg) || arg === "--verbose") continue;
    if (arg === "-V" || arg === "--version" || arg === "-h" || arg === "--help") {
      add(arg, "");
      continue;
    }
    if (arg.startsWith("--") && arg.includes("=")) {
      const key = arg.slice(0, arg.indexOf("="));
      if (!VALUE_OPTIONS.has(key)) optionError(command ?? "", `no such option: ${key}`);
      add(key, arg.slice(arg.indexOf("=") + 1));
      continue;
    }
    const takesValue =
      VALUE_OPTIONS.has(arg) && !(command !== "install" && (arg === "-e" || arg === "--editable"));
    if (takesValue) {
      if (i + 1 >= args.length) optionError(command ?? "", `${arg} option requires 1 argument`);
      add(arg, args[++i]);
      continue;
    }
    if (/^-[eric]./.test(arg) && !arg.startsWith("--") && command === "install") {
      add(arg.slice(0, 2), arg.slice(2));
      continue;
    }
    if (FLAG_OPTIONS.has(arg)) {
      add(arg, "");
      continue;
    }
    if (arg.startsWith("-")) optionError(command ?? "", `no such option: ${arg}`);
    if (command === null) command = arg;
    else positionals.push(arg);
  }
  return { command, opts, args: positionals };
}

/** Interactive spinner (a terminal) or pip's NonInteractiveSpinner lines. */
async function step(message, seconds = 0, status = "done") {
  const indent = "  ";
  if (quiet > 0) {
    if (seconds > 0) await sleep(seconds * 1000);
    return;
  }
  if (TTY) {
    process.stdout.write(`${indent}${message} ... `);
    const chars = ["-", "\\", "|", "/"];
    for (let t = 0; t < seconds * 8; t++) {
      process.stdout.write(`${chars[t % 4]}\b`);
      await sleep(125);
    }
    process.stdout.write(`${status}\n`);
    return;
  }
  info(`${indent}${message}: started`);
  // pip reports "still running..." every 60 s; the simulation compresses that to every second.
  for (let t = 0; t < seconds; t++) {
    await sleep(Math.min(1, seconds - t) * 1000);
    if (t + 1 < seconds) info(`${indent}${message}: still running...`);
  }
  info(`${indent}${message}: finished with status '${status}'`);
}

/** @returns {{ seconds: number; fail: string | null }} */
function pipFault() {
  const value = fault("pip");
  if (value === null || typeof value !== "object") return { seconds: 0, fail: null };
  const seconds = Number(/** @type {any} */ (value).seconds ?? 0);
  const fail = /** @type {any} */ (value).fail;
  return {
    seconds: Number.isFinite(seconds) && seconds > 0 ? seconds : 0,
    fail: typeof fail === "string" && fail !== "" ? fail : fail === true ? "error: build failed" : null,
  };
}

const VCS_SCHEMES =
  "bzr+http, bzr+https, bzr+ssh, bzr+sftp, bzr+ftp, bzr+lp, bzr+file, git+http, git+https, git+ssh, git+git, git+file, hg+file, hg+http, hg+https, hg+ssh, hg+static-http, svn+ssh, svn+http, svn+https, svn+svn, svn+file";

function hex(data, length = 64) {
  return createHash("sha256").update(data).digest("hex").slice(0, length);
}

/** @param {string} name @param {string} version @param {string} url */
function wheelCacheLines(name, version, url) {
  const h = createHash("sha224").update(url).digest("hex");
  const file = `${name.replace(/-/g, "_")}-${version}-0.editable-py3-none-any.whl`;
  const size = 7000 + (Number.parseInt(hex(url, 4), 16) % 6000);
  return [
    `  Created wheel for ${name}: filename=${file} size=${size} sha256=${hex(`${url}${version}`)}`,
    `  Stored in directory: /tmp/pip-ephem-wheel-cache-${randomBytes(4).toString("hex").slice(0, 8)}/wheels/${h.slice(0, 2)}/${h.slice(2, 4)}/${h.slice(4, 6)}/${h.slice(6)}`,
  ];
}

/** @param {string} name @param {string} version */
function uninstallLines(name, version) {
  info(`  Attempting uninstall: ${name}`);
  info(`    Found existing installation: ${name} ${version}`);
  info(`    Uninstalling ${name}-${version}:`);
  info(`      Successfully uninstalled ${name}-${version}`);
}

/** @param {number} mb */
function sizeText(mb) {
  return mb >= 1 ? `${mb.toFixed(1)} MB` : `${Math.round(mb * 1000)} kB`;
}

/**
 * pip install -e <dir>: the editable install of one project.
 * @param {string} spec as given @param {boolean} noDeps
 */
async function installEditable(spec, noDeps) {
  const dir = resolvePath(process.cwd(), spec.replace(/^file:\/\//, ""));
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) {
    error(
      `ERROR: ${spec} is not a valid editable requirement. It should either be a path to a local project or a VCS URL (beginning with ${VCS_SCHEMES}).`,
    );
    throw new PipExit(1);
  }
  const url = `file://${dir}`;
  info(`Obtaining ${url}`);
  const pyprojectFile = join(dir, "pyproject.toml");
  if (!existsSync(pyprojectFile) && !existsSync(join(dir, "setup.py"))) {
    error(
      `ERROR: ${url} does not appear to be a Python project: neither 'setup.py' nor 'pyproject.toml' found.`,
    );
    throw new PipExit(1);
  }
  const project = existsSync(pyprojectFile)
    ? parsePyproject(readFileSync(pyprojectFile, "utf8"))
    : { name: null, version: null, description: "", dependencies: [] };
  const name = project.name ?? "UNKNOWN";
  const version = project.version ?? "0.0.0";
  const { seconds, fail } = pipFault();

  await step("Installing build dependencies");
  await step("Checking if build backend supports build_editable");
  await step("Getting requirements to build editable");
  await step("Preparing editable metadata (pyproject.toml)");

  /** @type {{ name: string; from: string | null; to: string | null }[]} */
  const changes = [];
  if (!noDeps) {
    const steps = resolveDeps(project.dependencies, `${name}==${version}`);
    const collected = [];
    for (const s of steps) {
      if (s.kind === "satisfied") {
        info(`Requirement already satisfied: ${s.req.text} in ${SITE} (from ${s.from}) (${s.installed})`);
        continue;
      }
      info(`Collecting ${s.req.text} (from ${s.from})`);
      const wheel = wheelFor(s.req.name, s.version);
      info(`  Downloading ${wheel.file}.metadata (${1 + (Number.parseInt(hex(wheel.file, 2), 16) % 40)} kB)`);
      collected.push({ ...s, wheel });
    }
    for (const c of collected) {
      const mb = c.wheel.mb ?? 0.2;
      info(`Downloading ${c.wheel.file} (${sizeText(mb)})`);
      if (mb > 0.5)
        info(
          `   ${"━".repeat(40)} ${mb.toFixed(1)}/${mb.toFixed(1)} MB ${(40 + (mb % 30)).toFixed(1)} MB/s eta 0:00:00`,
        );
    }
    for (const c of collected.slice().reverse()) {
      const display = c.req.name.replace(/_/g, "-");
      changes.push({ name: display, from: c.installed, to: c.version });
    }
  }

  info(`Building wheels for collected packages: ${name}`);
  await step(`Building editable for ${name} (pyproject.toml)`, seconds, fail ? "error" : "done");
  if (fail) {
    const lines = fail.split("\n");
    error("  error: subprocess-exited-with-error");
    error("  ");
    error(`  × Building editable for ${name} (pyproject.toml) did not run successfully.`);
    error("  │ exit code: 1");
    error(`  ╰─> [${lines.length} lines of output]`);
    for (const line of lines) error(`      ${line}`);
    error("      [end of output]");
    error("  ");
    error("  note: This error originates from a subprocess, and is likely not a problem with pip.");
    error(`  ERROR: Failed building editable for ${name}`);
    info(`Failed to build ${name}`);
    error(
      `ERROR: Could not build wheels for ${name}, which is required to install pyproject.toml-based projects`,
    );
    throw new PipExit(1);
  }
  for (const line of wheelCacheLines(name, version, url)) info(line);
  info(`Successfully built ${name}`);

  const order = [...changes.map((c) => c.name), name];
  info(`Installing collected packages: ${order.join(", ")}`);
  for (const change of changes) if (change.from !== null) uninstallLines(change.name, change.from);
  const previous = editableInstall(name)?.version ?? installedVersion(name);
  if (previous !== null) uninstallLines(name, previous);
  writeEditableInstall({
    name,
    version,
    projectDir: dir,
    summary: project.description,
    requires: project.dependencies,
    license: "Apache-2.0",
  });
  recordPackageChanges(changes, `pip ${argv.join(" ")}`);

  const torch = changes.find((c) => normalizeName(c.name) === "torch");
  const torchvision = installedVersion("torchvision");
  if (torch && torchvision !== null && !changes.some((c) => normalizeName(c.name) === "torchvision")) {
    error(
      "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. This behaviour is the source of the following dependency conflicts.",
    );
    error(
      `torchvision ${torchvision} requires torch==${torch.from?.split("+")[0] ?? "2.9.1"}, but you have torch ${torch.to} which is incompatible.`,
    );
  }
  const installed = [...changes.map((c) => `${c.name}-${c.to}`), `${name}-${version}`].sort((a, b) =>
    a.toLowerCase().localeCompare(b.toLowerCase()),
  );
  info(`Successfully installed ${installed.join(" ")}`);
}

/** @param {Map<string, string[]>} opts @param {string[]} args */
async function install(opts, args) {
  const editables = [...(opts.get("-e") ?? []), ...(opts.get("--editable") ?? [])];
  const noDeps = opts.has("--no-deps");
  if (editables.length === 0 && args.length === 0 && !opts.has("-r") && !opts.has("--requirement")) {
    error('ERROR: You must give at least one requirement to install (see "pip help install")');
    throw new PipExit(1);
  }
  for (const spec of editables) await installEditable(spec, noDeps);
  const target = opts.get("--target")?.at(-1);
  for (const spec of args) {
    // a vLLM checkout into a directory of its own (vllm-build.mjs): the venv is not changed
    if (target !== undefined && (spec.startsWith(".") || spec.startsWith("/"))) {
      const source = resolvePath(spec);
      if (!isVllmSource(source) || !noDeps) {
        error(
          `ERROR: the simulated pip installs into --target only a vLLM source checkout with --no-deps; got ${spec}`,
        );
        throw new PipExit(1);
      }
      const code = await installVllmSource(source, resolvePath(target), { info, error });
      if (code !== 0) throw new PipExit(code);
      continue;
    }
    if (spec.startsWith(".") || spec.startsWith("/")) {
      error(
        `ERROR: the simulated pip installs local projects only in editable mode (-e ${spec}); got ${spec}`,
      );
      throw new PipExit(1);
    }
    const name = spec.split(/[=<>!~[;\s]/)[0];
    const have = installedVersion(name);
    if (have !== null) {
      info(`Requirement already satisfied: ${spec} in ${SITE} (${have})`);
      continue;
    }
    error(`ERROR: Could not find a version that satisfies the requirement ${spec} (from versions: none)`);
    error(`ERROR: No matching distribution found for ${spec}`);
    throw new PipExit(1);
  }
}

/** @param {Map<string, string[]>} opts @param {string[]} args */
function uninstall(opts, args) {
  if (args.length === 0) {
    error('ERROR: You must give at least one requirement to uninstall (see "pip help uninstall")');
    throw new PipExit(1);
  }
  const yes = opts.has("-y") || opts.has("--yes");
  /** @type {{ name: string; from: string | null; to: string | null }[]} */
  const changes = [];
  for (const spec of args) {
    const editable = editableInstall(spec);
    const version = editable?.version ?? installedVersion(spec);
    if (version === null) {
      error(`WARNING: Skipping ${spec} as it is not installed.`);
      continue;
    }
    const name =
      editable?.name ??
      [...installedPackages().keys()].find((k) => normalizeName(k) === normalizeName(spec)) ??
      spec;
    info(`Found existing installation: ${name} ${version}`);
    info(`Uninstalling ${name}-${version}:`);
    if (!yes) {
      info("  Would remove:");
      info(`    ${SITE}/${name.replace(/-/g, "_")}-${version}.dist-info/*`);
      process.stdout.write("Proceed (Y/n)? ");
      let answer = "";
      try {
        answer = readFileSync(0, "utf8").split("\n")[0].trim();
      } catch {
        answer = "";
      }
      if (/^n/i.test(answer)) continue;
    }
    if (editable) removeEditableInstall(name);
    else changes.push({ name, from: version, to: null });
    info(`  Successfully uninstalled ${name}-${version}`);
  }
  recordPackageChanges(changes, `pip ${argv.join(" ")}`);
}

/** @param {string[]} args */
function show(args) {
  if (args.length === 0) {
    error("ERROR: Please provide a package name or names.");
    throw new PipExit(1);
  }
  const packages = installedPackages();
  const blocks = [];
  const missing = [];
  for (const spec of args) {
    const key = [...packages.keys()].find((k) => normalizeName(k) === normalizeName(spec));
    if (key === undefined) {
      missing.push(spec);
      continue;
    }
    const editable = editableInstall(key);
    const meta = editable ? editableMetadata(editable) : { summary: "", license: "", requires: [] };
    const requires = [...new Set(meta.requires)].sort((a, b) =>
      a.toLowerCase().localeCompare(b.toLowerCase()),
    );
    blocks.push(
      [
        `Name: ${key}`,
        `Version: ${packages.get(key)}`,
        `Summary: ${meta.summary}`,
        "Home-page: ",
        "Author: ",
        "Author-email: ",
        `License: ${meta.license}`,
        `Location: ${SITE}`,
        ...(editable ? [`Editable project location: ${editable.projectDir}`] : []),
        `Requires: ${requires.join(", ")}`,
        "Required-by: ",
      ].join("\n"),
    );
  }
  if (missing.length > 0) error(`WARNING: Package(s) not found: ${missing.join(", ")}`);
  if (blocks.length === 0) throw new PipExit(1);
  process.stdout.write(`${blocks.join("\n---\n")}\n`);
}

/** @param {Map<string, string[]>} opts */
function list(opts) {
  const editableOnly = opts.has("-e") || opts.has("--editable");
  const format = (opts.get("--format") ?? ["columns"]).at(-1);
  const editables = new Map(editableInstalls().map((e) => [normalizeName(e.name), e.projectDir]));
  const rows = [...installedPackages()]
    .filter(([name]) => !editableOnly || editables.has(normalizeName(name)))
    .sort(([a], [b]) => a.toLowerCase().localeCompare(b.toLowerCase()))
    .map(([name, version]) => ({ name, version, location: editables.get(normalizeName(name)) ?? null }));
  if (format === "json") {
    process.stdout.write(
      `${JSON.stringify(
        rows.map((r) => ({
          name: r.name,
          version: r.version,
          ...(r.location ? { editable_project_location: r.location } : {}),
        })),
      )}\n`,
    );
    return;
  }
  if (format === "freeze") {
    for (const r of rows) process.stdout.write(`${r.name}==${r.version}\n`);
    return;
  }
  if (rows.length === 0) return;
  const withLocation = rows.some((r) => r.location !== null);
  const table = [
    ["Package", "Version", ...(withLocation ? ["Editable project location"] : [])],
    ...rows.map((r) => [r.name, r.version, ...(withLocation ? [r.location ?? ""] : [])]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  table.splice(
    1,
    0,
    widths.map((w) => "-".repeat(w)),
  );
  for (const row of table)
    process.stdout.write(
      `${row
        .map((c, i) => c.padEnd(widths[i]))
        .join(" ")
        .trimEnd()}\n`,
    );
}

function freeze() {
  const editables = new Map(editableInstalls().map((e) => [normalizeName(e.name), e.projectDir]));
  const rows = [...installedPackages()]
    .filter(([name]) => !["pip", "setuptools", "wheel", "distribute"].includes(normalizeName(name)))
    .sort(([a], [b]) => a.toLowerCase().localeCompare(b.toLowerCase()));
  for (const [name, version] of rows) {
    const location = editables.get(normalizeName(name));
    if (location === undefined) {
      process.stdout.write(`${name}==${version}\n`);
      continue;
    }
    let dir = location;
    let inGit = false;
    while (dir !== dirname(dir)) {
      if (existsSync(join(dir, ".git"))) {
        inGit = true;
        break;
      }
      dir = dirname(dir);
    }
    process.stdout.write(
      `# Editable ${inGit ? "Git install with no remote" : "install with no version control"} (${name}==${version})\n-e ${location}\n`,
    );
  }
}

async function main() {
  const { command, opts, args } = parseCommandLine(argv);
  if (opts.has("-V") || opts.has("--version")) {
    process.stdout.write(`pip ${VERSION} from ${join(SITE, "pip")} (python 3.12)\n`);
    return 0;
  }
  if (command === null || command === "help" || opts.has("-h") || opts.has("--help")) {
    process.stdout.write(GENERAL_HELP);
    return 0;
  }
  switch (command) {
    case "install":
      await install(opts, args);
      return 0;
    case "uninstall":
      uninstall(opts, args);
      return 0;
    case "show":
      show(args);
      return 0;
    case "list":
      list(opts);
      return 0;
    case "freeze":
      freeze();
      return 0;
    default:
      error(`ERROR: unknown command "${command}"`);
      return 1;
  }
}

try {
  process.exitCode = await main();
} catch (err) {
  if (!(err instanceof PipExit)) throw err;
  process.exitCode = err.code;
}
