/**
 * `hf download` of the simulated host: huggingface_hub 1.33's `snapshot_download` /
 * `hf_hub_download` (plain HTTP, no Xet). Same requests in the same order, same `--local-dir`
 * layout (`.cache/huggingface/download/*.metadata`, per-process `*.incomplete` temp files that a
 * killed process leaves behind and a new process never resumes), same cache layout without
 * `--local-dir`, same retries and errors. Not a command itself: hf.mjs calls `download()`.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  createReadStream,
  existsSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import {
  CLIError,
  DryRunError,
  HfHubHTTPError,
  hfRaiseForStatus,
  isTransportError,
  LocalEntryNotFoundError,
  OSErrorPy,
  ReadTimeout,
  RemoteEntryNotFoundError,
  RemoteProtocolError,
  RepositoryNotFoundError,
  RevisionNotFoundError,
  ValueErrorPy,
} from "./hf-errors.mjs";
import { envTimeoutMs, hfHeaders, nextLink, readBody, request, send } from "./hf-http.mjs";
import { ProgressBar } from "./hf-progress.mjs";

const REGEX_COMMIT_HASH = /^[0-9a-f]{40}$/;
const REGEX_SHA256 = /^[0-9a-f]{64}$/;
const MAX_HTTP_DOWNLOAD_SIZE = 50 * 1000 * 1000 * 1000;
const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);
const CACHEDIR_TAG =
  "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by huggingface_hub.\n# For information about cache directory tags, see:\n#\thttps://bford.info/cachedir/\n";

/** `_format_size` of huggingface_hub (`62.9M`). */
export function formatSize(num) {
  let n = num;
  for (const unit of ["", "K", "M", "G", "T", "P", "E", "Z"]) {
    if (Math.abs(n) < 1000) return `${n.toFixed(1)}${unit}`;
    n /= 1000;
  }
  return `${n.toFixed(1)}Y`;
}

/** Python's urllib.parse.quote: `safe` characters and unreserved ones stay, the rest is %-encoded. */
function quote(s, safe = "/") {
  let out = "";
  for (const ch of s) {
    if (/[A-Za-z0-9_.\-~]/.test(ch) || safe.includes(ch)) out += ch;
    else
      out += encodeURIComponent(ch).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      );
  }
  return out;
}

/** `_short_hash`: urlsafe base64 (with padding) of sha1(name). */
function shortHash(name) {
  return createHash("sha1").update(name).digest("base64").replace(/\+/g, "-").replace(/\//g, "_");
}

/** fnmatch.fnmatch (case-sensitive on POSIX): `*` and `?` match `/` too. */
function fnmatchToRegExp(pattern) {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === "*") re += ".*";
    else if (ch === "?") re += ".";
    else if (ch === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) re += "\\[";
      else {
        let body = pattern.slice(i + 1, end);
        if (body.startsWith("!")) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, "\\\\")}]`;
        i = end;
      }
    } else re += ch.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, "s");
}

/** `filter_repo_objects`: a pattern ending with "/" means everything below that folder. */
export function filterRepoObjects(items, allowPatterns, ignorePatterns) {
  const prep = (patterns) =>
    patterns === undefined || patterns === null
      ? undefined
      : patterns.map((p) => fnmatchToRegExp(p.endsWith("/") ? `${p}*` : p));
  const allow = prep(allowPatterns);
  const ignore = prep(ignorePatterns);
  return items.filter((item) => {
    if (allow !== undefined && !allow.some((re) => re.test(item))) return false;
    if (ignore?.some((re) => re.test(item))) return false;
    return true;
  });
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function touch(path) {
  try {
    closeSync(openSync(path, "a", 0o664));
  } catch {
    // like WeakFileLock: never fail on the lock file
  }
}

function validateRelativeFilename(filename) {
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

function localDownloadPaths(localDir, filename) {
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
function readDownloadMetadata(log, localDir, filename) {
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

function writeDownloadMetadata(localDir, filename, commitHash, etag) {
  const paths = localDownloadPaths(localDir, filename);
  touch(paths.lockPath);
  const now = (performance.timeOrigin + performance.now()) / 1000;
  writeFileSync(paths.metadataPath, `${commitHash}\n${etag}\n${now}\n`);
}

function sha256File(path) {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolvePromise(hash.digest("hex")));
  });
}

function normalizeEtag(etag) {
  if (!etag) return null;
  return etag.replace(/^W\//, "").replace(/^"|"$/g, "");
}

/** `tree_cache`: `<folder>/trees/<commit>.json` (format_version 1). */
function readTreeCache(folder, commitHash) {
  try {
    const data = JSON.parse(readFileSync(join(folder, "trees", `${commitHash}.json`), "utf8"));
    if (data.format_version !== 1 || typeof data.files !== "object") return null;
    return data.files;
  } catch {
    return null;
  }
}

function writeTreeCache(folder, commitHash, entries) {
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

/**
 * One `hf download` run.
 * @param {object} o
 * @param {string} o.endpoint  Hub URL (HF_ENDPOINT)
 * @param {string|undefined} o.token
 * @param {string} o.repoId
 * @param {string} o.repoType  "model" | "dataset" | "space"
 * @param {string|undefined} o.revision
 * @param {string[]} o.filenames
 * @param {string[]|undefined} o.include
 * @param {string[]|undefined} o.exclude
 * @param {string|undefined} o.localDir
 * @param {string|undefined} o.cacheDir
 * @param {boolean} o.forceDownload
 * @param {boolean} o.dryRun
 * @param {number} o.maxWorkers
 * @param {boolean} o.progress  show progress bars
 * @param {{warning(m: string): void, info(m: string): void}} o.log
 * @param {number} o.retryUnitMs  length of huggingface_hub's "1 second" retry wait
 * @param {number|undefined} o.crashAfterBytes  host fault: SIGKILL self after this many bytes written
 * @returns {Promise<string | object[]>} the local path, or the dry-run file infos
 */
export async function download(o) {
  const d = new Download(o);
  return await d.run();
}

class Download {
  constructor(o) {
    this.o = o;
    this.endpoint = o.endpoint.replace(/\/+$/, "");
    this.headers = hfHeaders(o.token);
    this.etagTimeoutMs = envTimeoutMs("HF_HUB_ETAG_TIMEOUT");
    this.downloadTimeoutMs = envTimeoutMs("HF_HUB_DOWNLOAD_TIMEOUT");
    this.written = 0;
    this.prefix = o.repoType === "model" ? "" : `${o.repoType}s/`;
  }

  async run() {
    const o = this.o;
    const filenames = o.filenames ?? [];
    const subfolders = filenames.filter((f) => f.endsWith("/"));
    const regular = filenames.filter((f) => !f.endsWith("/"));
    if (subfolders.length > 0) {
      if (o.include?.length) {
        throw new CLIError(
          `Cannot combine subfolder argument ('${subfolders[0]}') with \`--include\`. Please use \`--include "${subfolders[0]}*"\` instead.`,
        );
      }
      if (o.exclude?.length) {
        throw new CLIError(
          `Cannot combine subfolder argument ('${subfolders[0]}') with \`--exclude\`. Please use \`--include "${subfolders[0]}*"\` with \`--exclude\` instead.`,
        );
      }
    }
    if (regular.length > 0) {
      if (o.include?.length)
        o.log.warning("UserWarning: Ignoring `--include` since filenames have been explicitly set.");
      if (o.exclude?.length)
        o.log.warning("UserWarning: Ignoring `--exclude` since filenames have been explicitly set.");
    }
    if (o.localDir !== undefined) this.localDir = resolve(o.localDir);
    this.cacheDir = resolve(o.cacheDir ?? defaultCacheDir());
    this.storageFolder = join(this.cacheDir, `${o.repoType}s--${o.repoId.split("/").join("--")}`);

    if (regular.length === 1 && subfolders.length === 0) {
      const bar = this.singleFileBar();
      const result = await this.hfHubDownload(regular[0], o.revision ?? "main", bar);
      bar.close?.();
      return result;
    }
    const noFilenames = regular.length === 0 && subfolders.length === 0;
    const allow = noFilenames
      ? o.include
      : [...regular, ...subfolders.map((f) => `${f.replace(/\/+$/, "")}/**`)];
    const ignore = noFilenames ? o.exclude : undefined;
    return await this.snapshotDownload(o.revision ?? "main", allow, ignore);
  }

  /** The per-file byte bar `hf_hub_download` shows (desc filled in from Content-Disposition). */
  singleFileBar() {
    const enabled = this.o.progress && !this.o.dryRun;
    const self = { bar: undefined };
    return {
      open: (desc, total, initial) => {
        if (!enabled || self.bar) return;
        self.bar = new ProgressBar({ desc, total, unit: "B", unitScale: true });
        if (initial) self.bar.update(initial);
      },
      update: (n) => self.bar?.update(n),
      close: () => self.bar?.close(),
    };
  }

  // --- snapshot_download ----------------------------------------------------------------------

  async snapshotDownload(revision, allow, ignore) {
    const o = this.o;
    const treeFolder =
      this.localDir !== undefined ? join(this.localDir, ".cache", "huggingface") : this.storageFolder;
    let commitHash = REGEX_COMMIT_HASH.test(revision) ? revision : null;
    let apiCallError = null;
    if (commitHash === null) {
      try {
        const url = `${this.endpoint}/api/${o.repoType}s/${o.repoId}/revision/${quote(revision, "")}`;
        const info = JSON.parse((await request("GET", url, { headers: this.headers })).body.toString("utf8"));
        commitHash = info.sha;
      } catch (error) {
        if (error instanceof RevisionNotFoundError) throw error;
        if (
          error instanceof HfHubHTTPError ||
          (isTransportError(error) && !(error instanceof RemoteProtocolError))
        ) {
          apiCallError = error;
        } else throw error;
      }
    }

    if (commitHash === null) {
      if (o.dryRun) {
        throw new DryRunError(
          "Dry run cannot be performed as the repository cannot be accessed. Please check your internet connection or authentication token.",
          apiCallError,
        );
      }
      const refPath = join(this.storageFolder, "refs", revision);
      if (existsSync(refPath)) commitHash = readFileSync(refPath, "utf8");
      if (commitHash !== null && this.localDir === undefined) {
        const snapshotFolder = join(this.storageFolder, "snapshots", commitHash);
        if (existsSync(snapshotFolder)) {
          this.raiseIfIncomplete(
            treeFolder,
            commitHash,
            snapshotFolder,
            allow,
            ignore,
            revision,
            apiCallError,
          );
          return snapshotFolder;
        }
      }
      if (this.localDir !== undefined && existsSync(this.localDir) && readdirSync(this.localDir).length > 0) {
        if (commitHash !== null) {
          this.raiseIfIncomplete(
            treeFolder,
            commitHash,
            this.localDir,
            allow,
            ignore,
            revision,
            apiCallError,
          );
        }
        o.log.warning(
          `Returning existing local_dir \`${this.localDir}\` as remote repo cannot be accessed in \`snapshot_download\` (${apiCallError?.message}).`,
        );
        return realpathSync(this.localDir);
      }
      if (
        apiCallError instanceof RepositoryNotFoundError ||
        (apiCallError instanceof HfHubHTTPError && apiCallError.response.status === 401)
      ) {
        throw apiCallError;
      }
      const name = apiCallError?.pyType?.split(".").pop() ?? "Exception";
      throw new LocalEntryNotFoundError(
        `Got: ${name}: ${apiCallError?.message}\nAn error happened while trying to locate the files on the Hub, and we cannot find the appropriate snapshot folder for the specified revision on the local disk. Please check your internet connection and try again.`,
        apiCallError,
      );
    }

    let tree = readTreeCache(treeFolder, commitHash);
    if (tree === null) {
      tree = {};
      let url = `${this.endpoint}/api/${o.repoType}s/${o.repoId}/tree/${quote(commitHash, "")}?recursive=true&expand=false`;
      while (url !== undefined) {
        const page = await request("GET", url, { headers: this.headers });
        for (const entry of JSON.parse(page.body.toString("utf8"))) {
          if (entry.type !== "file") continue;
          const item = { size: entry.size, blob_id: entry.oid };
          if (entry.lfs) {
            item.lfs_sha256 = entry.lfs.oid;
            item.lfs_size = entry.lfs.size;
          }
          tree[entry.path] = item;
        }
        url = nextLink(page.headers);
      }
      if (!o.dryRun) writeTreeCache(treeFolder, commitHash, tree);
    }
    const files = filterRepoObjects(Object.keys(tree), allow, ignore);
    const desc = `${o.dryRun ? "[dry-run] " : ""}Fetching ${files.length} files`;
    if (revision !== commitHash && this.localDir === undefined) {
      try {
        mkdirSync(join(this.storageFolder, "refs", dirname(revision)), { recursive: true });
        writeFileSync(join(this.storageFolder, "refs", revision), commitHash);
      } catch (error) {
        o.log.warning(
          `Ignored error while writing commit hash to ${join(this.storageFolder, "refs", revision)}: ${error.message}.`,
        );
      }
    }

    // hf_thread_map: a pool of max_workers; the bar advances as results come in order; an error is
    // raised once every task has finished (ThreadPoolExecutor's `with` waits for all of them).
    const bar = new ProgressBar({ desc, total: files.length, disabled: !o.progress });
    const results = new Array(files.length);
    const errors = new Array(files.length);
    const done = new Array(files.length).fill(false);
    let inOrder = 0;
    let next = 0;
    const noBar = { open() {}, update() {}, close() {} };
    const worker = async () => {
      while (next < files.length) {
        const index = next++;
        try {
          results[index] = await this.hfHubDownload(files[index], commitHash, noBar);
        } catch (error) {
          errors[index] = error;
        }
        done[index] = true;
        let advanced = 0;
        while (inOrder < files.length && done[inOrder] && errors[inOrder] === undefined) {
          inOrder++;
          advanced++;
        }
        if (advanced > 0) bar.update(advanced);
      }
    };
    const workers = Math.max(1, Math.min(o.maxWorkers, files.length));
    await Promise.all(Array.from({ length: workers }, worker));
    bar.close();
    const firstError = errors.find((e) => e !== undefined);
    if (firstError !== undefined) throw firstError;
    if (o.dryRun) return results;
    if (this.localDir !== undefined) return realpathSync(this.localDir);
    return join(this.storageFolder, "snapshots", commitHash);
  }

  raiseIfIncomplete(treeFolder, commitHash, baseDir, allow, ignore, revision, apiCallError) {
    const tree = readTreeCache(treeFolder, commitHash);
    if (tree === null) return;
    const missing = filterRepoObjects(Object.keys(tree), allow, ignore).filter(
      (p) => !isFile(join(baseDir, p)),
    );
    if (missing.length === 0) return;
    let sample = missing.slice(0, 3).join(", ");
    if (missing.length > 3) sample += `, ... (${missing.length - 3} more)`;
    const reason =
      apiCallError !== null
        ? `The Hub could not be reached (${apiCallError.pyType?.split(".").pop()}: ${apiCallError.message}).`
        : "Outgoing traffic is disabled ('local_files_only=True').";
    const error = new LocalEntryNotFoundError(
      `The cached snapshot for '${this.o.repoId}' (revision '${revision}', commit ${commitHash}) is incomplete: ${missing.length} file(s) are missing (${sample}). ${reason} Re-run the download with network access to complete the snapshot.`,
      apiCallError,
    );
    error.pyType = "huggingface_hub.errors.IncompleteSnapshotError";
    error.snapshotPath = baseDir;
    throw error;
  }

  // --- hf_hub_download ------------------------------------------------------------------------

  fileUrl(filename, revision) {
    return `${this.endpoint}/${this.prefix}${this.o.repoId}/resolve/${quote(revision, "")}/${quote(filename)}`;
  }

  async hfHubDownload(filename, revision, bar) {
    return this.localDir !== undefined
      ? await this.toLocalDir(filename, revision, bar)
      : await this.toCacheDir(filename, revision, bar);
  }

  dryRunInfo(filename, commitHash, fileSize, isCached, localPath, willDownload) {
    return {
      commit_hash: commitHash,
      file_size: fileSize,
      filename,
      is_cached: isCached,
      local_path: localPath,
      will_download: willDownload,
    };
  }

  async toLocalDir(filename, revision, bar) {
    const o = this.o;
    const localDir = this.localDir;
    const paths = localDownloadPaths(localDir, filename);
    const metadata = readDownloadMetadata(o.log, localDir, filename);
    if (
      REGEX_COMMIT_HASH.test(revision) &&
      isFile(paths.filePath) &&
      metadata !== null &&
      metadata.commitHash === revision
    ) {
      if (o.dryRun) {
        return this.dryRunInfo(
          filename,
          revision,
          statSync(paths.filePath).size,
          true,
          paths.filePath,
          o.forceDownload,
        );
      }
      if (!o.forceDownload) return paths.filePath;
    }

    const meta = await this.metadataWithRetry(filename, revision, () => isFile(paths.filePath));
    if (meta.error !== null) {
      if (isFile(paths.filePath)) {
        if (o.dryRun || !o.forceDownload) {
          o.log.warning(
            `Couldn't access the Hub to check for update but local file already exists. Defaulting to existing file. (error: ${meta.error.message})`,
          );
        }
        if (o.dryRun && metadata !== null) {
          return this.dryRunInfo(
            filename,
            metadata.commitHash,
            statSync(paths.filePath).size,
            true,
            paths.filePath,
            o.forceDownload,
          );
        }
        if (!o.forceDownload) return paths.filePath;
      }
      this.raiseOnHeadCallError(meta.error);
    }
    const { etag, commitHash, size, url } = meta;

    if (!o.forceDownload && isFile(paths.filePath)) {
      if (metadata !== null && metadata.etag === etag) {
        writeDownloadMetadata(localDir, filename, commitHash, etag);
        if (o.dryRun) return this.dryRunInfo(filename, commitHash, size, true, paths.filePath, false);
        return paths.filePath;
      }
      if (metadata === null && REGEX_SHA256.test(etag)) {
        if ((await sha256File(paths.filePath)) === etag) {
          writeDownloadMetadata(localDir, filename, commitHash, etag);
          if (o.dryRun) return this.dryRunInfo(filename, commitHash, size, true, paths.filePath, false);
          return paths.filePath;
        }
      }
    }

    if (!o.forceDownload) {
      const cached = join(this.storageFolder, "snapshots", commitHash, ...filename.split("/"));
      if (isFile(cached)) {
        touch(paths.lockPath);
        writeFileSync(paths.filePath, readFileSync(cached));
        writeDownloadMetadata(localDir, filename, commitHash, etag);
        if (o.dryRun) return this.dryRunInfo(filename, commitHash, size, true, paths.filePath, false);
        return paths.filePath;
      }
    }

    if (o.dryRun) {
      const isCached = isFile(paths.filePath);
      return this.dryRunInfo(
        filename,
        commitHash,
        size,
        isCached,
        paths.filePath,
        o.forceDownload || !isCached,
      );
    }

    touch(paths.lockPath);
    try {
      unlinkSync(paths.filePath);
    } catch {
      // missing_ok
    }
    await this.downloadToTmpAndMove(paths.incompletePath(etag), paths.filePath, url, size, bar);
    writeDownloadMetadata(localDir, filename, commitHash, etag);
    return paths.filePath;
  }

  async toCacheDir(filename, revision, bar) {
    const o = this.o;
    validateRelativeFilename(filename);
    const storage = this.storageFolder;
    const parts = filename.split("/");
    if (REGEX_COMMIT_HASH.test(revision)) {
      const pointer = join(storage, "snapshots", revision, ...parts);
      if (existsSync(pointer) && !o.forceDownload) {
        if (o.dryRun)
          return this.dryRunInfo(filename, revision, statSync(pointer).size, true, pointer, false);
        return pointer;
      }
    }
    const meta = await this.metadataWithRetry(filename, revision, () => false);
    if (meta.error !== null) {
      // Offline fallback: a pointer for this revision already in the cache.
      let commitHash = REGEX_COMMIT_HASH.test(revision) ? revision : null;
      const refPath = join(storage, "refs", revision);
      if (commitHash === null && existsSync(refPath)) commitHash = readFileSync(refPath, "utf8");
      if (commitHash !== null) {
        const pointer = join(storage, "snapshots", commitHash, ...parts);
        if (existsSync(pointer) && !o.forceDownload) return pointer;
      }
      this.raiseOnHeadCallError(meta.error);
    }
    const { etag, commitHash, size, url } = meta;
    const blobPath = join(storage, "blobs", etag);
    const pointerPath = join(storage, "snapshots", commitHash, ...parts);
    mkdirSync(dirname(blobPath), { recursive: true });
    mkdirSync(dirname(pointerPath), { recursive: true });
    if (revision !== commitHash) {
      mkdirSync(join(storage, "refs", dirname(revision)), { recursive: true });
      writeFileSync(join(storage, "refs", revision), commitHash);
    }
    const link = () => {
      try {
        lstatSync(pointerPath);
        unlinkSync(pointerPath);
      } catch {
        // no previous pointer
      }
      symlinkSync(relative(dirname(pointerPath), blobPath), pointerPath);
    };
    if (!o.forceDownload) {
      if (existsSync(pointerPath)) {
        if (o.dryRun) return this.dryRunInfo(filename, commitHash, size, true, pointerPath, false);
        return pointerPath;
      }
      if (existsSync(blobPath)) {
        if (o.dryRun) return this.dryRunInfo(filename, commitHash, size, true, pointerPath, false);
        link();
        return pointerPath;
      }
    }
    if (o.dryRun) {
      const isCached = existsSync(blobPath);
      return this.dryRunInfo(filename, commitHash, size, isCached, pointerPath, o.forceDownload || !isCached);
    }
    const lockDir = join(this.cacheDir, ".locks", basename(storage));
    mkdirSync(lockDir, { recursive: true });
    touch(join(lockDir, `${etag}.lock`));
    await this.downloadToTmpAndMove(`${blobPath}.incomplete`, blobPath, url, size, bar);
    link();
    return pointerPath;
  }

  /** `_get_metadata_or_catch_error`, then the single retry with backoff when no local file exists. */
  async metadataWithRetry(filename, revision, localFileExists) {
    let meta = await this.getMetadataOrCatchError(filename, revision, false);
    if (meta.error !== null && !localFileExists() && !this.o.forceDownload) {
      const e = meta.error;
      if (isTransportError(e) || (e instanceof HfHubHTTPError && RETRY_STATUS.has(e.response.status))) {
        this.o.log.info("No local file found. Retrying..");
        meta = await this.getMetadataOrCatchError(filename, revision, true);
      }
    }
    return meta;
  }

  raiseOnHeadCallError(error) {
    if (
      error instanceof RepositoryNotFoundError ||
      (error instanceof HfHubHTTPError && error.response.status === 401)
    ) {
      throw error;
    }
    throw new LocalEntryNotFoundError(
      "An error happened while trying to locate the file on the Hub and we cannot find the requested files in the local cache. Please check your connection and try again or make sure your Internet connection is on.",
      error,
    );
  }

  async getMetadataOrCatchError(filename, revision, retryOnErrors) {
    const url = this.fileUrl(filename, revision);
    try {
      const response = await this.headWithBackoff(url, retryOnErrors);
      hfRaiseForStatus(response);
      const commitHash = response.headers["x-repo-commit"];
      if (!commitHash) {
        throw new OSErrorPy(
          "Distant resource does not seem to be on huggingface.co. It is possible that a configuration issue prevents you from downloading resources from https://huggingface.co. Please check your firewall and proxy settings and make sure your SSL certificates are updated.",
        );
      }
      const etag = normalizeEtag(response.headers["x-linked-etag"] ?? response.headers.etag);
      if (!etag)
        throw new OSErrorPy(
          "Distant resource does not have an ETag, we won't be able to reliably ensure reproducibility.",
        );
      const sizeHeader = response.headers["x-linked-size"] ?? response.headers["content-length"];
      const size = sizeHeader === undefined ? Number.NaN : Number.parseInt(sizeHeader, 10);
      if (!Number.isFinite(size)) throw new OSErrorPy("Distant resource does not have a Content-Length.");
      return { error: null, etag, commitHash, size, url: response.url };
    } catch (error) {
      if (error instanceof RevisionNotFoundError || error instanceof RemoteEntryNotFoundError) throw error;
      if (error instanceof HfHubHTTPError || isTransportError(error) || error instanceof OSErrorPy) {
        return { error, etag: null, commitHash: null, size: null, url: null };
      }
      throw error;
    }
  }

  /** HEAD with `Accept-Encoding: identity`; with `retryOnErrors`, http_backoff (5 retries, 1-2-4-8-8 s). */
  async headWithBackoff(url, retryOnErrors) {
    const headers = { ...this.headers, "accept-encoding": "identity" };
    const timeoutMs = retryOnErrors ? 60_000 : this.etagTimeoutMs;
    let tries = 0;
    let wait = 1;
    for (;;) {
      tries++;
      try {
        const response = await request("HEAD", url, { headers, timeoutMs, raise: false });
        if (!retryOnErrors || !RETRY_STATUS.has(response.status)) return response;
        this.o.log.warning(`HTTP Error ${response.status} thrown while requesting HEAD ${url}`);
        if (tries > 5) return response;
      } catch (error) {
        if (!retryOnErrors || !isTransportError(error)) throw error;
        this.o.log.warning(`'${error.message}' thrown while requesting HEAD ${url}`);
        if (tries > 5) throw error;
      }
      this.o.log.warning(`Retrying in ${wait}s [Retry ${tries}/5].`);
      await sleep(wait * this.o.retryUnitMs);
      wait = Math.min(8, wait * 2);
    }
  }

  /**
   * `_download_to_tmp_and_move`: a process-unique `<…>.<8 hex>.incomplete` next to the metadata,
   * removed on any handled error (the `finally`), left behind when the process is killed.
   */
  async downloadToTmpAndMove(incompletePath, destination, url, expectedSize, bar) {
    if (existsSync(destination) && !this.o.forceDownload) return;
    const stem = incompletePath.replace(/\.incomplete$/, "");
    const tmpPath = `${stem}.${randomBytes(4).toString("hex")}.incomplete`;
    const fd = openSync(tmpPath, "w");
    let closed = false;
    try {
      await this.httpGet(url, fd, { expectedSize, bar });
      closeSync(fd);
      closed = true;
      renameSync(tmpPath, destination);
    } finally {
      if (!closed) {
        try {
          closeSync(fd);
        } catch {
          // already closed
        }
      }
      try {
        unlinkSync(tmpPath);
      } catch {
        // moved into place (or never created)
      }
    }
  }

  /** `http_get`: streams into fd; on a cut connection resumes with Range up to 5 times (1 s apart). */
  async httpGet(url, fd, { resumeSize = 0, expectedSize, bar, retries = 5 }) {
    if (expectedSize !== undefined && resumeSize === expectedSize) return;
    const headers = { ...this.headers };
    if (resumeSize > 0) headers.range = `bytes=${resumeSize}-`;
    else if (expectedSize > MAX_HTTP_DOWNLOAD_SIZE) {
      throw new ValueErrorPy(
        "The file is too large to be downloaded using the regular download method.  Install `hf_xet` with `pip install hf_xet` for xet-powered downloads.",
      );
    }
    const response = await this.getWithBackoff(url, headers);
    if (response.status >= 400) {
      const body = await readBody(response).catch(() => Buffer.alloc(0));
      hfRaiseForStatus({ ...response, body, requestRange: headers.range });
    }
    let position = resumeSize;
    if (resumeSize > 0 && response.status === 200) {
      ftruncateSync(fd, 0);
      position = 0;
    }
    const contentRange = response.headers["content-range"];
    const total = contentRange
      ? Number(contentRange.split("/").pop())
      : Number(response.headers["content-length"] ?? expectedSize);
    let displayed = url;
    const disposition = response.headers["content-disposition"];
    const match = disposition ? /filename="(.*?)";/.exec(disposition) : null;
    if (match) displayed = match[1];
    if (displayed.length > 40) displayed = `(…)${displayed.slice(-40)}`;
    bar.open(displayed, Number.isFinite(total) ? total : expectedSize, position);

    let received = 0;
    const failure = await new Promise((resolvePromise) => {
      const { res } = response;
      res.setTimeout(this.downloadTimeoutMs, () => res.destroy(new Error("timed out")));
      res.on("data", (chunk) => {
        writeSync(fd, chunk, 0, chunk.length, position);
        position += chunk.length;
        received += chunk.length;
        bar.update(chunk.length);
        this.countWritten(chunk.length);
      });
      res.on("error", () => undefined);
      res.on("close", () => {
        if (res.complete) resolvePromise(null);
        else if (res.errored?.message === "timed out") resolvePromise(new ReadTimeout("timed out"));
        else {
          const expected = response.headers["content-length"] ?? "?";
          resolvePromise(
            new RemoteProtocolError(
              `peer closed connection without sending complete message body (received ${received} bytes, expected ${expected})`,
            ),
          );
        }
      });
    });
    if (failure !== null) {
      const left = received > 0 ? 5 : retries;
      if (left <= 0) {
        this.o.log.warning(`Error while downloading from ${url}: ${failure.message}\nMax retries exceeded.`);
        throw failure;
      }
      this.o.log.warning(
        `Error while downloading from ${url}: ${failure.message}\nTrying to resume download...`,
      );
      await sleep(this.o.retryUnitMs);
      return await this.httpGet(url, fd, { resumeSize: position, expectedSize, bar, retries: left - 1 });
    }
    if (expectedSize !== undefined && expectedSize !== position) {
      throw new OSErrorPy(
        `Consistency check failed: file should be of size ${expectedSize} but has size ${position} (${displayed}).\nThis is usually due to network issues while downloading the file. Please retry with \`force_download=True\`.`,
      );
    }
  }

  /** `http_stream_backoff(retry_on_exceptions=(), retry_on_status_codes=(408, 429))`. */
  async getWithBackoff(url, headers) {
    let tries = 0;
    let wait = 1;
    for (;;) {
      tries++;
      const response = await send("GET", url, { headers, timeoutMs: this.downloadTimeoutMs });
      if (response.status !== 408 && response.status !== 429) return response;
      this.o.log.warning(`HTTP Error ${response.status} thrown while requesting GET ${url}`);
      if (tries > 5) return response;
      response.res.resume();
      const retryAfter = Number.parseInt(response.headers["retry-after"] ?? "", 10);
      const seconds = Number.isFinite(retryAfter) ? retryAfter + 1 : wait;
      this.o.log.warning(`Retrying in ${seconds}s [Retry ${tries}/5].`);
      await sleep(seconds * this.o.retryUnitMs);
      wait = Math.min(8, wait * 2);
    }
  }

  /** Host fault `crashAfterBytes`: the process dies (SIGKILL) like an OOM kill or a lost session. */
  countWritten(n) {
    this.written += n;
    const limit = this.o.crashAfterBytes;
    if (limit !== undefined && this.written >= limit) process.kill(process.pid, "SIGKILL");
  }
}
