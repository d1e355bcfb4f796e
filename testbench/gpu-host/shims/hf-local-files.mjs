/**
 * What `hf download` keeps on disk, as huggingface_hub 1.33 lays it out: `--local-dir`'s
 * `.cache/huggingface/` (CACHEDIR.TAG, .gitignore, `download/<file>.metadata` and `.lock`, the
 * per-file `*.incomplete` names), the tree cache `trees/<commit>.json`, and the default cache dir.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  createReadStream,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { ValueErrorPy } from "./hf-errors.mjs";
import { shortHash } from "./hf-names.mjs";

const CACHEDIR_TAG =
  "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by huggingface_hub.\n# For information about cache directory tags, see:\n#\thttps://bford.info/cachedir/\n";

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function touch(path) {
  try {
    closeSync(openSync(path, "a", 0o664));
  } catch {
    // like WeakFileLock: never fail on the lock file
  }
}

export function validateRelativeFilename(filename) {
  if (filename.replace(/\\/g, "/").split("/").includes("..")) {
    throw new ValueErrorPy(
      `Invalid filename '${filename}': cannot contain a '..' path segment. Please ask the repository owner to rename this file.`,
    );
  }
  if (filename.startsWith("/") || /^[A-Za-z]:/.test(filename) || filename.startsWith("\\")) {
    throw new ValueErrorPy(
      `Invalid filename '${filename}': cannot be an absolute, drive-relative or UNC path. Please ask the repository owner to rename this file.`,
    );
  }
}

/** `local_dir/.cache/huggingface`, with its .gitignore and CACHEDIR.TAG. */
function huggingfaceDir(localDir) {
  const dir = join(localDir, ".cache", "huggingface");
  mkdirSync(dir, { recursive: true });
  const tag = join(dir, "CACHEDIR.TAG");
  if (!existsSync(tag)) writeFileSync(tag, CACHEDIR_TAG);
  const gitignore = join(dir, ".gitignore");
  if (!existsSync(gitignore)) writeFileSync(gitignore, "*");
  return dir;
}

export function localDownloadPaths(localDir, filename) {
  validateRelativeFilename(filename);
  const parts = filename.split("/");
  const filePath = join(localDir, ...parts);
  const metadataPath = `${join(huggingfaceDir(localDir), "download", ...parts)}.metadata`;
  const lockPath = metadataPath.replace(/\.metadata$/, ".lock");
  mkdirSync(dirname(filePath), { recursive: true });
  mkdirSync(dirname(metadataPath), { recursive: true });
  return {
    filePath,
    metadataPath,
    lockPath,
    incompletePath: (etag) =>
      join(dirname(metadataPath), `${shortHash(basename(metadataPath))}.${etag}.incomplete`),
  };
}

/** `read_download_metadata`: null when missing, corrupted or older than the file. */
export function readDownloadMetadata(log, localDir, filename) {
  const paths = localDownloadPaths(localDir, filename);
  touch(paths.lockPath);
  if (!existsSync(paths.metadataPath)) return null;
  let metadata;
  try {
    const [commitHash = "", etag = "", ts = ""] = readFileSync(paths.metadataPath, "utf8").split("\n");
    const timestamp = Number.parseFloat(ts.trim());
    if (!Number.isFinite(timestamp)) throw new Error(`could not convert string to float: '${ts.trim()}'`);
    metadata = { filename, commitHash: commitHash.trim(), etag: etag.trim(), timestamp };
  } catch (error) {
    log.warning(
      `Invalid metadata file ${paths.metadataPath}: ${error.message}. Removing it from disk and continue.`,
    );
    try {
      unlinkSync(paths.metadataPath);
    } catch {
      // ignore
    }
    return null;
  }
  try {
    const stat = statSync(paths.filePath);
    if (stat.mtimeMs / 1000 - 1 <= metadata.timestamp) return metadata;
    log.info(`Ignored metadata for '${filename}' (outdated). Will re-compute hash.`);
  } catch {
    return null;
  }
  return null;
}

export function writeDownloadMetadata(localDir, filename, commitHash, etag) {
  const paths = localDownloadPaths(localDir, filename);
  touch(paths.lockPath);
  const now = (performance.timeOrigin + performance.now()) / 1000;
  writeFileSync(paths.metadataPath, `${commitHash}\n${etag}\n${now}\n`);
}

export function sha256File(path) {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolvePromise(hash.digest("hex")));
  });
}

/** `tree_cache`: `<folder>/trees/<commit>.json` (format_version 1). */
export function readTreeCache(folder, commitHash) {
  try {
    const data = JSON.parse(readFileSync(join(folder, "trees", `${commitHash}.json`), "utf8"));
    if (data.format_version !== 1 || typeof data.files !== "object") return null;
    return data.files;
  } catch {
    return null;
  }
}

export function writeTreeCache(folder, commitHash, entries) {
  const dir = join(folder, "trees");
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${commitHash}.${randomBytes(4).toString("hex")}.tmp`);
  writeFileSync(tmp, JSON.stringify({ format_version: 1, files: entries }, null, 1));
  renameSync(tmp, join(dir, `${commitHash}.json`));
}

export function defaultCacheDir() {
  if (process.env.HF_HUB_CACHE) return process.env.HF_HUB_CACHE;
  const home =
    process.env.HF_HOME ??
    join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? "/root", ".cache"), "huggingface");
  return join(home, "hub");
}
