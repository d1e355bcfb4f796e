/**
 * The byte transfer of `hf download`: huggingface_hub's `_download_to_tmp_and_move`, `http_get`
 * (streaming into a process-unique `*.incomplete` file, resuming a cut connection with Range) and
 * `http_stream_backoff`, plus the host fault `crashAfterBytes`. The base of the download classes
 * (hf-file-download.mjs, hf-download.mjs): it holds the state of one run.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, ftruncateSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { hfRaiseForStatus, OSErrorPy, ReadTimeout, RemoteProtocolError, ValueErrorPy } from "./hf-errors.mjs";
import { envTimeoutMs, hfHeaders, readBody, send } from "./hf-http.mjs";
import { sleep } from "./hf-local-files.mjs";

const MAX_HTTP_DOWNLOAD_SIZE = 50 * 1000 * 1000 * 1000;

/** One `hf download` run: its options, headers, timeouts and byte count; the download layers extend it. */
export class HttpTransfer {
  constructor(o) {
    this.o = o;
    this.endpoint = o.endpoint.replace(/\/+$/, "");
    this.headers = hfHeaders(o.token);
    this.etagTimeoutMs = envTimeoutMs("HF_HUB_ETAG_TIMEOUT");
    this.downloadTimeoutMs = envTimeoutMs("HF_HUB_DOWNLOAD_TIMEOUT");
    this.written = 0;
    this.prefix = o.repoType === "model" ? "" : `${o.repoType}s/`;
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
