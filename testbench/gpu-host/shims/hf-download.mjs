/**
 * `hf download` of the simulated host: huggingface_hub 1.33's `snapshot_download` /
 * `hf_hub_download` (plain HTTP, no Xet). Same requests in the same order, same `--local-dir`
 * layout (`.cache/huggingface/download/*.metadata`, per-process `*.incomplete` temp files that a
 * killed process leaves behind and a new process never resumes), same cache layout without
 * `--local-dir`, same retries and errors. Not a command itself: hf.mjs calls `download()`.
 *
 * The layers, as in huggingface_hub: `snapshot_download` here, `hf_hub_download` in
 * hf-file-download.mjs, the byte transfer in hf-http-get.mjs; the on-disk layout in
 * hf-local-files.mjs and the small helpers in hf-names.mjs.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  CLIError,
  DryRunError,
  HfHubHTTPError,
  isTransportError,
  LocalEntryNotFoundError,
  RemoteProtocolError,
  RepositoryNotFoundError,
  RevisionNotFoundError,
} from "./hf-errors.mjs";
import { FileDownload } from "./hf-file-download.mjs";
import { nextLink, request } from "./hf-http.mjs";
import { defaultCacheDir, isFile, readTreeCache, writeTreeCache } from "./hf-local-files.mjs";
import { filterRepoObjects, quote, REGEX_COMMIT_HASH } from "./hf-names.mjs";
import { ProgressBar } from "./hf-progress.mjs";

export { defaultCacheDir } from "./hf-local-files.mjs";
export { filterRepoObjects, formatSize } from "./hf-names.mjs";

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

class Download extends FileDownload {
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
}
