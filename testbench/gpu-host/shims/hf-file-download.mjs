/**
 * `hf_hub_download` of huggingface_hub 1.33 for one file: the metadata HEAD (with its retry), the
 * `--local-dir` path (metadata files, sha256 check, copy from the cache) and the cache-dir path
 * (blobs, snapshot symlinks, refs), and the errors when the Hub cannot be reached.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import {
  HfHubHTTPError,
  hfRaiseForStatus,
  isTransportError,
  LocalEntryNotFoundError,
  OSErrorPy,
  RemoteEntryNotFoundError,
  RepositoryNotFoundError,
  RevisionNotFoundError,
} from "./hf-errors.mjs";
import { request } from "./hf-http.mjs";
import { HttpTransfer } from "./hf-http-get.mjs";
import {
  isFile,
  localDownloadPaths,
  readDownloadMetadata,
  sha256File,
  sleep,
  touch,
  validateRelativeFilename,
  writeDownloadMetadata,
} from "./hf-local-files.mjs";
import { normalizeEtag, quote, REGEX_COMMIT_HASH, REGEX_SHA256 } from "./hf-names.mjs";

const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/** `hf_hub_download`: one file into the local dir or the cache. */
export class FileDownload extends HttpTransfer {
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
}
