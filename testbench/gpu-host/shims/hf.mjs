#!/usr/bin/env node
/**
 * Imitates `hf`, the Hugging Face Hub CLI of huggingface_hub 1.33, on the simulated GPU host.
 *
 * Commands: `hf --help`, `hf version` (and `-v/--version`), `hf env`, `hf download` (with
 * `--help`). Other `hf` commands exist in the real CLI but are not simulated (exit 2, says so).
 *
 * Hub endpoint: `HF_ENDPOINT` when set, else `hubUrl` of <sandbox>/state/config.json.
 * Token: `--token`, else `HF_TOKEN`, else the token file (`HF_TOKEN_PATH`, `$HF_HOME/token`).
 * Output: stdout `✓ Downloaded` / `  path: <dir>`; tqdm-style progress and logs on stderr; errors
 * `Error: …` + `Hint: set HF_DEBUG=1 …` (exit 1); unknown exceptions as a Python traceback (exit 1);
 * usage errors exit 2. Colours are never emitted (as with NO_COLOR).
 *
 * Host faults (state/faults.json, key "hf"): `{ "crashAfterBytes": N }` — the process SIGKILLs itself
 * after writing N bytes (a killed download); `{ "retryDelayMs": N }` — length of huggingface_hub's
 * "1 second" retry wait (also env `HF_SIM_RETRY_DELAY_MS`), to keep retry tests fast.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { release } from "node:os";
import { join } from "node:path";
import { defaultCacheDir, download, formatSize } from "./hf-download.mjs";
import { formatKnownException, traceback, UsageError } from "./hf-errors.mjs";
import { hfHeaders, request } from "./hf-http.mjs";
import { HF_DOWNLOAD_HELP, HF_HELP, HF_VERSION, SKILL_HINT } from "./hf-texts.mjs";
import { fault, readConfig, readFaults, recordCall, SANDBOX_ENV } from "./sandbox.mjs";

const REAL_COMMANDS = new Set([
  "auth",
  "buckets",
  "cache",
  "collections",
  "cp",
  "datasets",
  "discussions",
  "endpoints",
  "extensions",
  "ext",
  "jobs",
  "models",
  "papers",
  "repos",
  "repo",
  "sandbox",
  "skills",
  "spaces",
  "sync",
  "upload",
  "upload-large-folder",
  "webhooks",
  "update",
]);

const out = (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
const err = (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);

function hfHome() {
  return (
    process.env.HF_HOME ??
    join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? "/root", ".cache"), "huggingface")
  );
}

function tokenPath() {
  return process.env.HF_TOKEN_PATH ?? join(hfHome(), "token");
}

/** `get_token`: HF_TOKEN, then the token file. */
function storedToken() {
  const env = process.env.HF_TOKEN?.replace(/\r?\n/g, "").trim();
  if (env) return env;
  try {
    const token = readFileSync(tokenPath(), "utf8").trim();
    return token || undefined;
  } catch {
    return undefined;
  }
}

function sandboxState() {
  if (!process.env[SANDBOX_ENV]) return { inSandbox: false, config: {}, faults: {} };
  return { inSandbox: true, config: readConfig(), faults: readFaults() };
}

function endpointOf(config) {
  const env = process.env.HF_ENDPOINT;
  if (env) return env.replace(/\/+$/, "");
  if (typeof config.hubUrl === "string" && config.hubUrl) return config.hubUrl.replace(/\/+$/, "");
  return "https://huggingface.co";
}

/** `check_skill_update`: a hint on stderr, at most once every 24 hours. */
function skillHint(command) {
  if (process.env.HF_HUB_DISABLE_UPDATE_CHECK || command === "skills" || command === "update") return;
  const stamp = join(hfHome(), ".check_for_skill_update_done");
  try {
    if (existsSync(stamp) && Date.now() - statSync(stamp).mtimeMs < 24 * 3600 * 1000) return;
    mkdirSync(hfHome(), { recursive: true });
    writeFileSync(stamp, "");
  } catch {
    return;
  }
  err(SKILL_HINT);
}

function usageError(usage, helpCommand, message) {
  return new UsageError(message, usage, helpCommand);
}

/** Click-style parsing of `hf download` arguments. */
function parseDownloadArgs(args) {
  const usage = "Usage: hf download [OPTIONS] REPO_ID [FILENAMES]...";
  const fail = (message) => usageError(usage, "hf download -h", message);
  const o = {
    positional: [],
    repoType: undefined,
    revision: undefined,
    include: undefined,
    exclude: undefined,
    cacheDir: undefined,
    localDir: undefined,
    forceDownload: false,
    dryRun: false,
    token: undefined,
    maxWorkers: 8,
    format: "auto",
    help: false,
  };
  const valued = {
    "--type": "repoType",
    "--repo-type": "repoType",
    "--revision": "revision",
    "--include": "include",
    "--exclude": "exclude",
    "--cache-dir": "cacheDir",
    "--local-dir": "localDir",
    "--token": "token",
    "--max-workers": "maxWorkers",
    "--format": "format",
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      o.positional.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      o.positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (name === "-h" || name === "--help") {
      o.help = true;
      continue;
    }
    const flags = {
      "--force-download": ["forceDownload", true],
      "--no-force-download": ["forceDownload", false],
      "--dry-run": ["dryRun", true],
      "--no-dry-run": ["dryRun", false],
      "--json": ["format", "json"],
      "-q": ["format", "quiet"],
      "--quiet": ["format", "quiet"],
      "--no-truncate": ["noTruncate", true],
    };
    if (flags[name]) {
      const [key, value] = flags[name];
      o[key] = value;
      continue;
    }
    const key = valued[name];
    if (key === undefined) {
      throw fail(`No such option: ${name}`);
    }
    let value;
    if (eq > 0 && arg.startsWith("--")) value = arg.slice(eq + 1);
    else {
      if (i + 1 >= args.length) throw fail(`Option '${name}' requires an argument.`);
      value = args[++i];
    }
    if (key === "include" || key === "exclude") {
      o[key] = [...(o[key] ?? []), value];
    } else if (key === "maxWorkers") {
      if (!/^[+-]?\d+$/.test(value.trim())) {
        throw fail(`Invalid value for '--max-workers': '${value}' is not a valid integer.`);
      }
      o.maxWorkers = Number.parseInt(value, 10);
    } else if (key === "repoType") {
      if (!["model", "dataset", "space", "kernel"].includes(value)) {
        throw fail(
          `Invalid value for '--type' / '--repo-type': '${value}' is not one of 'model', 'dataset', 'space', 'kernel'.`,
        );
      }
      o.repoType = value;
    } else if (key === "format") {
      if (!["auto", "human", "agent", "json", "quiet"].includes(value)) {
        throw fail(
          `Invalid value for '--format': '${value}' is not one of 'auto', 'human', 'agent', 'json', 'quiet'.`,
        );
      }
      o.format = value;
    } else {
      o[key] = value;
    }
  }
  if (o.help) return o;
  if (o.positional.length === 0) throw fail("Missing argument 'REPO_ID'.");
  return o;
}

/** Python's `json.dumps` (", " and ": " separators, ASCII only). */
function pyDumps(value) {
  if (Array.isArray(value)) return `[${value.map(pyDumps).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${pyDumps(k)}: ${pyDumps(v)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** `out.table` (human: padded columns, agent: TSV, json, quiet: first column). */
function printTable(mode, items) {
  const headers = ["file", "size"];
  if (items.length === 0) {
    if (mode === "json") out("[]");
    else if (mode !== "quiet") out("No results found.");
    return;
  }
  if (mode === "json") {
    out(
      JSON.stringify(items)
        .replace(/,"/g, ', "')
        .replace(/":/g, '": ')
        .replace(/},\s*{/g, "}, {"),
    );
    return;
  }
  if (mode === "quiet") {
    for (const item of items) out(item.file);
    return;
  }
  if (mode === "agent") {
    out(headers.join("\t"));
    for (const item of items) out(`${item.file}\t${item.size}`);
    return;
  }
  const upper = headers.map((h) => h.toUpperCase());
  const widths = headers.map((h, c) =>
    Math.max(upper[c].length, ...items.map((item) => String(item[h]).length)),
  );
  const row = (cells) => cells.map((cell, c) => String(cell).padEnd(widths[c])).join(" ");
  const lines = [
    row(upper),
    row(widths.map((w) => "-".repeat(w))),
    ...items.map((item) => row(headers.map((h) => item[h]))),
  ];
  out(lines.join("\n"));
}

async function runDownload(args, state) {
  const o = parseDownloadArgs(args);
  if (o.help) {
    out(HF_DOWNLOAD_HELP);
    return 0;
  }
  if (o.localDir !== undefined && o.cacheDir !== undefined) {
    const { CLIError } = await import("./hf-errors.mjs");
    throw new CLIError(
      "Cannot use both `--local-dir` and `--cache-dir` at the same time. Use `--cache-dir` (or set the HF_HOME environment variable) for shared caching, or `--local-dir` for a one-off download to a specific directory.",
    );
  }
  let repoId = o.positional[0];
  let filenames = o.positional.slice(1);
  let repoType = o.repoType ?? "model";
  let revision = o.revision;
  if (repoId.startsWith("hf://")) {
    const { CLIError } = await import("./hf-errors.mjs");
    if (o.repoType !== undefined)
      throw new CLIError(`'--repo-type' cannot be used with an 'hf://' URI ('${repoId}').`);
    if (o.revision !== undefined)
      throw new CLIError(`'--revision' cannot be used with an 'hf://' URI ('${repoId}').`);
    const rest = repoId.slice("hf://".length);
    const parts = rest.split("/");
    if (["datasets", "spaces", "models", "kernels"].includes(parts[0]))
      repoType = parts.shift().replace(/s$/, "");
    const id = `${parts[0]}/${parts[1] ?? ""}`;
    const at = id.indexOf("@");
    repoId = at >= 0 ? id.slice(0, at) : id;
    revision = at >= 0 ? id.slice(at + 1) : undefined;
    const pathInRepo = parts.slice(2).join("/");
    if (pathInRepo) {
      if (filenames.length > 0) {
        throw new CLIError(
          `Cannot combine a file path in the hf:// URI ('${pathInRepo}') with positional filenames ${JSON.stringify(filenames)}.`,
        );
      }
      filenames = [pathInRepo];
    }
  }
  const mode = o.format === "auto" ? "human" : o.format;
  const faults = state.faults.hf && typeof state.faults.hf === "object" ? state.faults.hf : {};
  const retryUnitMs = Number(faults.retryDelayMs ?? process.env.HF_SIM_RETRY_DELAY_MS ?? 1000);
  const progressEnv = process.env.HF_HUB_DISABLE_PROGRESS_BARS;
  const progress =
    mode === "human" && !(progressEnv && ["1", "true", "yes", "on"].includes(progressEnv.toLowerCase()));
  const log = { warning: (m) => err(m), info: (m) => err(m) };
  const result = await download({
    endpoint: endpointOf(state.config),
    token: o.token ?? storedToken(),
    repoId,
    repoType,
    revision,
    filenames,
    include: o.include,
    exclude: o.exclude,
    localDir: o.localDir,
    cacheDir: o.cacheDir,
    forceDownload: o.forceDownload,
    dryRun: o.dryRun,
    maxWorkers: o.maxWorkers,
    progress,
    log,
    retryUnitMs: Number.isFinite(retryUnitMs) && retryUnitMs >= 0 ? retryUnitMs : 1000,
    crashAfterBytes: typeof faults.crashAfterBytes === "number" ? faults.crashAfterBytes : undefined,
  });

  if (typeof result === "string") {
    if (mode === "human") out(`✓ Downloaded\n  path: ${result}`);
    else if (mode === "agent") out(`path=${result}`);
    else if (mode === "json") out(pyDumps({ path: result }));
    else out(result);
    return 0;
  }
  const infos = Array.isArray(result) ? result : [result];
  const will = infos.filter((r) => r.will_download);
  if (mode === "human" || mode === "agent") {
    const total = will.reduce((sum, r) => sum + r.file_size, 0);
    out(
      `[dry-run] Will download ${will.length} files (out of ${infos.length}) totalling ${formatSize(total)}.`,
    );
  }
  const items = [...infos]
    .sort((a, b) => (a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0))
    .map((info) => ({ file: info.filename, size: info.will_download ? formatSize(info.file_size) : "-" }));
  printTable(mode, items);
  return 0;
}

async function runEnv(state) {
  const token = storedToken();
  const home = hfHome();
  const info = [
    ["huggingface_hub version", HF_VERSION],
    ["Platform", `Linux-${release()}-${process.arch === "arm64" ? "aarch64" : "x86_64"}-with-glibc2.39`],
    ["Python version", "3.12.3"],
    ["Running in iPython ?", "No"],
    ["Running in notebook ?", "No"],
    ["Running in Google Colab ?", "No"],
    ["Running in Google Colab Enterprise ?", "No"],
    ["Token path ?", tokenPath()],
    ["Has saved token ?", token !== undefined ? "True" : "False"],
  ];
  if (token !== undefined) {
    try {
      const r = await request("GET", `${endpointOf(state.config)}/api/whoami-v2`, {
        headers: hfHeaders(token),
        timeoutMs: 3000,
      });
      info.push(["Who am I ?", JSON.parse(r.body.toString("utf8")).name]);
    } catch {
      // like the real one: silently left out
    }
  }
  const flag = (name) => {
    const v = process.env[name];
    return v !== undefined && ["1", "on", "yes", "true"].includes(v.toLowerCase()) ? "True" : "False";
  };
  info.push(
    ["Configured git credential helpers", ""],
    ["Run by AI agent ?", "No"],
    ["Installation method", "pip"],
    ["httpx", "0.28.1"],
    ["hf_xet", "N/A"],
    ["gradio", "N/A"],
    ["tensorboard", "N/A"],
    ["ENDPOINT", endpointOf(state.config)],
    ["HF_HUB_CACHE", defaultCacheDir()],
    ["HF_ASSETS_CACHE", process.env.HF_ASSETS_CACHE ?? join(home, "assets")],
    ["HF_TOKEN_PATH", tokenPath()],
    ["HF_STORED_TOKENS_PATH", join(home, "stored_tokens")],
    ["HF_HUB_OFFLINE", flag("HF_HUB_OFFLINE")],
    ["HF_HUB_DISABLE_TELEMETRY", flag("HF_HUB_DISABLE_TELEMETRY")],
    [
      "HF_HUB_DISABLE_PROGRESS_BARS",
      process.env.HF_HUB_DISABLE_PROGRESS_BARS === undefined ? "None" : flag("HF_HUB_DISABLE_PROGRESS_BARS"),
    ],
    ["HF_HUB_DISABLE_SYMLINKS", flag("HF_HUB_DISABLE_SYMLINKS")],
    ["HF_HUB_DISABLE_SYMLINKS_WARNING", flag("HF_HUB_DISABLE_SYMLINKS_WARNING")],
    ["HF_HUB_DISABLE_EXPERIMENTAL_WARNING", flag("HF_HUB_DISABLE_EXPERIMENTAL_WARNING")],
    ["HF_HUB_DISABLE_IMPLICIT_TOKEN", flag("HF_HUB_DISABLE_IMPLICIT_TOKEN")],
    ["HF_HUB_DISABLE_XET", flag("HF_HUB_DISABLE_XET")],
    ["HF_HUB_ETAG_TIMEOUT", process.env.HF_HUB_ETAG_TIMEOUT ?? "10"],
    ["HF_HUB_DOWNLOAD_TIMEOUT", process.env.HF_HUB_DOWNLOAD_TIMEOUT ?? "10"],
    ["HF_XET_HIGH_PERFORMANCE", flag("HF_XET_HIGH_PERFORMANCE")],
  );
  out(
    `\nCopy-and-paste the text below in your GitHub issue.\n\n${info.map(([k, v]) => `- ${k}: ${v}`).join("\n")}\n`,
  );
  return 0;
}

async function main(argv) {
  const state = sandboxState();
  if (state.inSandbox) recordCall("hf", argv);
  const command = argv[0];
  // fault `hfVersion`: an older (or newer) huggingface_hub, printed in 1.33's format (a bare version)
  const forced = state.inSandbox ? fault("hfVersion") : undefined;
  const version = typeof forced === "string" ? forced : HF_VERSION;
  if (command === "-v" || command === "--version") {
    out(version);
    return 0;
  }
  skillHint(command);
  if (command === undefined || command === "-h" || command === "--help") {
    out(HF_HELP);
    return 0;
  }
  if (command === "version") {
    out(version);
    return 0;
  }
  if (command === "env") return await runEnv(state);
  if (command === "download") return await runDownload(argv.slice(1), state);
  if (command.startsWith("-")) {
    throw usageError("Usage: hf [OPTIONS] [COMMAND] [ARGS]...", "hf -h", `No such option: ${command}`);
  }
  if (REAL_COMMANDS.has(command)) {
    err(`hf (simulated host): \`hf ${command}\` exists in huggingface_hub 1.33 but is not simulated here.`);
    return 2;
  }
  throw usageError("Usage: hf [OPTIONS] [COMMAND] [ARGS]...", "hf -h", `No such command '${command}'.`);
}

function fail(error) {
  if (error instanceof UsageError) {
    err(`${error.usage}\nTry '${error.helpHint}' for help.\n\nError: ${error.message}`);
    return 2;
  }
  let message = formatKnownException(error);
  if (message !== null) {
    if (error.snapshotPath) message += `\nIncomplete snapshot available at: ${error.snapshotPath}`;
    err(`Error: ${message}`);
    if (process.env.HF_DEBUG && process.env.HF_DEBUG !== "0") err(traceback(error));
    else err("Hint: set HF_DEBUG=1 as environment variable for full traceback.");
    return 1;
  }
  err(traceback(error));
  return 1;
}

let code;
try {
  code = await main(process.argv.slice(2));
} catch (error) {
  code = fail(error);
}
process.exit(code);
