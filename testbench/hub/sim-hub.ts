import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ContentReader, computeDigests, type FileDigests } from "./content.ts";
import {
  entryNotFound,
  gatedNoToken,
  gatedNotApproved,
  type HubError,
  invalidCredentials,
  pageNotFound,
  repoNotFound,
  revisionNotFound,
  serverError,
} from "./hub-errors.ts";
import { modelInfoJson, refsJson, type StoredFile, type StoredModel, treeEntries } from "./hub-json.ts";
import { ByteRateLimiter } from "./throttle.ts";
import type { HubFault, HubRequest, SimModel } from "./types.ts";

export interface SimHubOptions {
  /** Valid HF tokens (`Authorization: Bearer <token>`). Default: `[SIM_HUB_TOKEN]`. Any other token gets 401. */
  tokens?: string[];
  /** Rate limit for all file bodies together (bytes/s). Default: unlimited. */
  bytesPerSecond?: number;
  /** Generated files up to this size get their real sha256; larger ones a stand-in. Default 256 MiB. */
  realHashMaxBytes?: number;
  /** Entries per page of the tree listing (the Hub pages at 1000 with `Link: <…>; rel="next"`). */
  treePageSize?: number;
}

/** The token accepted by default. */
export const SIM_HUB_TOKEN = "hf_SimulatedHubTokenForModelswapTests0000";

const LFS_EXTENSIONS =
  /\.(safetensors|bin|pt|pth|ckpt|gguf|onnx|msgpack|h5|model|tflite|npz|zst|tar|gz|zip)$/;
const TEN_MIB = 10 * 1024 * 1024;
const SHA_RE = /^[0-9a-f]{40}$/;

/** Default commit sha of a repo: stable per id. */
export function defaultSha(id: string): string {
  return createHash("sha1").update(`commit\0${id}`).digest("hex");
}

function requestId(): string {
  return `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomBytes(12).toString("hex")}`;
}

function isTextFile(path: string): boolean {
  return /\.(json|txt|md|py|jinja|yaml|yml|gitattributes)$/.test(path) || path.endsWith(".gitattributes");
}

/** Resolves on the next 'drain' or 'close' of a response, removing both listeners. */
function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/** `bytes=a-b`, `bytes=a-`, `bytes=-n`. Multi-range and malformed headers are ignored (full body). */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | "unsatisfiable" | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (match === null) return undefined;
  const [, a = "", b = ""] = match;
  if (a === "" && b === "") return undefined;
  if (a === "") {
    const suffix = Number(b);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(a);
  const end = b === "" ? size - 1 : Math.min(Number(b), size - 1);
  if (b !== "" && Number(b) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end };
}

function decodeSegments(pathname: string): string[] | undefined {
  try {
    return pathname
      .split("/")
      .slice(1)
      .map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

/**
 * A simulated Hugging Face Hub on 127.0.0.1: the model API, tree listings and file downloads
 * (`/resolve/`) with the real paths, JSON shapes, headers and error codes. Weights are generated, not
 * stored. Faults and a byte-rate throttle are switched per test.
 */
export class SimHub {
  private readonly models = new Map<string, StoredModel>();
  private readonly digestCache = new Map<string, FileDigests>();
  private readonly log: HubRequest[] = [];
  private readonly limiter = new ByteRateLimiter();
  private readonly tokens: Set<string>;
  private readonly realHashMaxBytes: number;
  private readonly treePageSize: number;
  private throttle: number | null;
  private fault: HubFault | null = null;
  private faultUses = 0;
  private stopped = false;
  private apiHold: { promise: Promise<void>; release: () => void; waiting: number } | undefined;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    opts: SimHubOptions,
  ) {
    this.tokens = new Set(opts.tokens ?? [SIM_HUB_TOKEN]);
    this.realHashMaxBytes = opts.realHashMaxBytes ?? 256 * 1024 * 1024;
    this.treePageSize = opts.treePageSize ?? 1000;
    this.throttle = opts.bytesPerSecond ?? null;
    this.limiter.setRate(this.throttle);
  }

  /** Starts a Hub on a free loopback port. */
  static async start(opts: SimHubOptions = {}): Promise<SimHub> {
    let hub: SimHub | undefined;
    const server = createServer((req, res) => {
      hub?.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { "Content-Type": "text/plain" });
          res.end(`simulated hub error: ${String(error)}`);
        } else {
          res.destroy();
        }
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    hub = new SimHub(server, `http://127.0.0.1:${port}`, opts);
    return hub;
  }

  /** Adds (or replaces) a repository. Returns it with defaults filled in (sizes, revisions, totalBytes). */
  addModel(model: SimModel): SimModel {
    const parts = model.id.split("/");
    if (parts.length !== 2 || parts.some((p) => p === "")) {
      throw new Error(`model id must be "org/name", got ${JSON.stringify(model.id)}`);
    }
    const seen = new Set<string>();
    const files: StoredFile[] = model.files.map((f) => {
      if (seen.has(f.path)) throw new Error(`duplicate file ${f.path} in ${model.id}`);
      seen.add(f.path);
      const content = f.content === undefined ? undefined : Buffer.from(f.content);
      const size = content?.length ?? f.size;
      if (!Number.isInteger(size) || size < 0) throw new Error(`bad size for ${model.id}/${f.path}: ${size}`);
      return { path: f.path, size, content, lfs: f.lfs ?? (size > TEN_MIB || LFS_EXTENSIONS.test(f.path)) };
    });
    const sha = model.revisions?.main ?? model.sha ?? defaultSha(model.id);
    const revisions: Record<string, string> = { main: sha, ...(model.revisions ?? {}) };
    for (const [name, rev] of Object.entries(revisions)) {
      if (!SHA_RE.test(rev))
        throw new Error(`revision ${name} of ${model.id} must be a 40-hex sha, got ${rev}`);
    }
    const normalised: SimModel = {
      ...model,
      sha,
      revisions,
      files: files.map((f) => ({
        path: f.path,
        size: f.size,
        lfs: f.lfs,
        ...(f.content ? { content: f.content } : {}),
      })),
      totalBytes: files.reduce((sum, f) => sum + f.size, 0),
    };
    for (const key of [...this.digestCache.keys()]) {
      if (key.startsWith(`${model.id}\0`)) this.digestCache.delete(key);
    }
    this.models.set(model.id, { model: normalised, files, revisions });
    return normalised;
  }

  removeModel(id: string): void {
    this.models.delete(id);
  }

  /** The repository as stored (with defaults), or undefined. */
  getModel(id: string): SimModel | undefined {
    return this.models.get(id)?.model;
  }

  /** sha256 (the LFS oid) and git blob id of one file, as the API reports them. */
  fileDigests(repo: string, path: string): FileDigests {
    const stored = this.models.get(repo);
    const file = stored?.files.find((f) => f.path === path);
    if (stored === undefined || file === undefined) throw new Error(`no file ${path} in ${repo}`);
    return this.digestsOf(repo, file);
  }

  /** Content bytes [start, end) of a file, as the Hub would serve them. */
  fileBytes(repo: string, path: string, start = 0, end?: number): Buffer {
    const stored = this.models.get(repo);
    const file = stored?.files.find((f) => f.path === path);
    if (stored === undefined || file === undefined) throw new Error(`no file ${path} in ${repo}`);
    const stop = Math.min(end ?? file.size, file.size);
    return new ContentReader(repo, path, file.size, file.content).read(start, stop - start);
  }

  /** Rate limit for all file bodies together; null = unlimited. */
  setThrottle(bytesPerSecond: number | null): void {
    this.throttle = bytesPerSecond;
    this.applyRate();
  }

  /**
   * Holds API requests (model info, trees) before they are answered, until `releaseApi`: a test knows
   * the bot is waiting on the Hub (`apiHeld`) and can kill it there.
   */
  holdApi(): void {
    if (this.apiHold !== undefined) return;
    let release: () => void = () => undefined;
    const promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.apiHold = { promise, release, waiting: 0 };
  }

  /** Resolves once an API request is waiting on the hold. */
  async apiHeld(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((this.apiHold?.waiting ?? 0) === 0) {
      if (Date.now() > deadline) throw new Error(`no Hub API request reached the hold in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  releaseApi(): void {
    this.apiHold?.release();
    this.apiHold = undefined;
  }

  setFault(fault: HubFault | null): void {
    this.fault = fault;
    this.faultUses = 0;
    this.applyRate();
  }

  /** Copies of the requests seen so far, oldest first. */
  requests(): HubRequest[] {
    return this.log.map((r) => ({ ...r }));
  }

  clearRequests(): void {
    this.log.length = 0;
  }

  /** File body bytes served by GET /resolve (optionally for one repo, one file). */
  bytesServed(repo?: string, file?: string): number {
    let total = 0;
    for (const r of this.log) {
      if (r.kind !== "resolve" || r.method !== "GET") continue;
      if (repo !== undefined && r.repo !== repo) continue;
      if (file !== undefined && r.file !== file) continue;
      total += r.bytesSent;
    }
    return total;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private applyRate(): void {
    const rate = this.fault?.kind === "slow" ? this.fault.bytesPerSecond : this.throttle;
    this.limiter.setRate(rate);
  }

  private digestsOf(repo: string, file: StoredFile): FileDigests {
    const key = `${repo}\0${file.path}`;
    let d = this.digestCache.get(key);
    if (d === undefined) {
      d = computeDigests(repo, file.path, file.size, file.lfs, file.content, this.realHashMaxBytes);
      this.digestCache.set(key, d);
    }
    return d;
  }

  /** Consumes one use of a fault of this kind when it applies; returns it. */
  private takeFault<K extends HubFault["kind"]>(
    kind: K,
    applies: (f: Extract<HubFault, { kind: K }>) => boolean = () => true,
  ): Extract<HubFault, { kind: K }> | undefined {
    const f = this.fault;
    if (f === null || f.kind !== kind) return undefined;
    const typed = f as Extract<HubFault, { kind: K }>;
    if (!applies(typed)) return undefined;
    const limit = "times" in typed ? typed.times : undefined;
    const defaultLimit = kind === "status" ? 1 : Number.POSITIVE_INFINITY;
    this.faultUses += 1;
    if (this.faultUses >= (limit ?? defaultLimit)) {
      this.fault = null;
      this.faultUses = 0;
      this.applyRate();
    }
    return typed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const segments = decodeSegments(url.pathname);
    const isApi = segments?.[0] === "api";
    const isResolve = !isApi && segments?.[2] === "resolve";
    const record: HubRequest = {
      method: req.method ?? "GET",
      path: segments === undefined ? url.pathname : `/${segments.join("/")}`,
      query: url.search.replace(/^\?/, ""),
      status: 0,
      bytesSent: 0,
      kind: isApi ? "api" : isResolve ? "resolve" : "other",
      aborted: false,
      startedAt: Date.now(),
    };
    const hold = isApi ? this.apiHold : undefined;
    if (hold !== undefined) {
      hold.waiting += 1;
      await hold.promise;
    }
    if (typeof req.headers.range === "string") record.range = req.headers.range;
    if (isResolve && segments !== undefined) {
      record.repo = `${segments[0]}/${segments[1]}`;
      record.file = segments.slice(4).join("/");
    }
    const auth = req.headers.authorization;
    const token = auth?.startsWith("Bearer ") ? auth.slice("Bearer ".length).trim() : undefined;
    if (token !== undefined) {
      record.token = token;
      record.tokenValid = this.tokens.has(token);
    }
    this.log.push(record);
    res.on("close", () => {
      record.endedAt = Date.now();
      if (!res.writableFinished) record.aborted = true;
    });

    if (this.takeFault("reset")) {
      record.aborted = true;
      req.socket.destroy();
      return;
    }
    const statusFault = this.takeFault("status", (f) => {
      const on = f.on ?? "all";
      return on === "all" || (on === "api" && isApi) || (on === "resolve" && isResolve);
    });
    if (statusFault) return this.sendError(req, res, record, serverError(statusFault.status), isApi);
    if (segments === undefined) return this.sendError(req, res, record, pageNotFound(), true);
    if (token !== undefined && !this.tokens.has(token)) {
      return this.sendError(req, res, record, invalidCredentials(), isApi);
    }
    const authenticated = token !== undefined;

    if (isApi) return this.handleApi(req, res, record, segments.slice(1), url, token);
    if (isResolve) return this.handleResolve(req, res, record, segments, token, authenticated);
    return this.sendError(req, res, record, pageNotFound(), false);
  }

  private lookup(repo: string, token: string | undefined): StoredModel | HubError {
    const stored = this.models.get(repo);
    if (stored === undefined || (stored.model.private === true && token === undefined)) {
      return repoNotFound(token !== undefined);
    }
    return stored;
  }

  private resolveRevision(stored: StoredModel, revision: string): string | undefined {
    const named = stored.revisions[revision];
    if (named !== undefined) return named;
    if (/^[0-9a-f]{7,40}$/.test(revision)) {
      return Object.values(stored.revisions).find((sha) => sha.startsWith(revision));
    }
    return undefined;
  }

  private async handleApi(
    req: IncomingMessage,
    res: ServerResponse,
    record: HubRequest,
    rest: string[],
    url: URL,
    token: string | undefined,
  ): Promise<void> {
    if (rest[0] === "whoami-v2" && rest.length === 1) {
      if (token === undefined) return this.sendError(req, res, record, invalidCredentials(), true);
      return this.sendJson(req, res, record, 200, {
        type: "user",
        id: "6560e4a5c3f9f1b2a7d0c001",
        name: "modelswap-bot",
        fullname: "modelswap bot",
        isPro: false,
        orgs: [],
        auth: { type: "access_token", accessToken: { displayName: "modelswap-sim", role: "read" } },
      });
    }
    if (rest[0] !== "models" || rest.length < 3 || (req.method !== "GET" && req.method !== "HEAD")) {
      return this.sendError(req, res, record, pageNotFound(), true);
    }
    const repo = `${rest[1]}/${rest[2]}`;
    const found = this.lookup(repo, token);
    if (!("model" in found)) return this.sendError(req, res, record, found, true);
    const stored = found;
    const tail = rest.slice(3);
    const digests = (file: StoredFile) => this.digestsOf(repo, file);

    if (tail.length === 0 || (tail[0] === "revision" && tail.length === 2)) {
      const revision = tail[1] ?? "main";
      const sha = this.resolveRevision(stored, revision);
      if (sha === undefined) return this.sendError(req, res, record, revisionNotFound(revision), true);
      const expand = [...url.searchParams.getAll("expand[]"), ...url.searchParams.getAll("expand")];
      const blobs = url.searchParams.get("blobs") === "true" || url.searchParams.get("blobs") === "1";
      return this.sendJson(req, res, record, 200, modelInfoJson(stored, { sha, blobs, expand, digests }));
    }
    if (tail[0] === "refs" && tail.length === 1)
      return this.sendJson(req, res, record, 200, refsJson(stored));
    if (tail[0] === "tree" && tail.length >= 2) {
      const revision = tail[1]!;
      const sha = this.resolveRevision(stored, revision);
      if (sha === undefined) return this.sendError(req, res, record, revisionNotFound(revision), true);
      const dir = tail.slice(2).join("/").replace(/\/+$/, "");
      const recursive = ["true", "1", "True"].includes(url.searchParams.get("recursive") ?? "");
      const entries = treeEntries(stored, dir, recursive, digests);
      if (entries === undefined) return this.sendError(req, res, record, entryNotFound(sha), true);
      const cursor = Number(url.searchParams.get("cursor") ?? "0");
      const from = Number.isInteger(cursor) && cursor > 0 ? cursor : 0;
      const page = entries.slice(from, from + this.treePageSize);
      const headers: Record<string, string> = {};
      if (from + this.treePageSize < entries.length) {
        const next = new URL(url.href);
        next.searchParams.set("cursor", String(from + this.treePageSize));
        next.searchParams.set("limit", String(this.treePageSize));
        headers.Link = `<${next.href}>; rel="next"`;
      }
      return this.sendJson(req, res, record, 200, page, headers);
    }
    return this.sendError(req, res, record, pageNotFound(), true);
  }

  private async handleResolve(
    req: IncomingMessage,
    res: ServerResponse,
    record: HubRequest,
    segments: string[],
    token: string | undefined,
    authenticated: boolean,
  ): Promise<void> {
    const repo = `${segments[0]}/${segments[1]}`;
    const revision = segments[3] ?? "";
    const path = segments.slice(4).join("/");
    const found = this.lookup(repo, token);
    if (!("model" in found)) return this.sendError(req, res, record, found, false);
    const stored = found;
    const sha = this.resolveRevision(stored, revision);
    if (sha === undefined) return this.sendError(req, res, record, revisionNotFound(revision), false);
    const gated = stored.model.gated;
    if (gated !== undefined && gated !== false) {
      if (!authenticated) return this.sendError(req, res, record, gatedNoToken(repo), false);
      const approved = stored.model.approvedTokens;
      if (approved !== undefined && (token === undefined || !approved.includes(token))) {
        return this.sendError(req, res, record, gatedNotApproved(repo, this.url), false);
      }
    }
    const file = stored.files.find((f) => f.path === path);
    if (file === undefined) return this.sendError(req, res, record, entryNotFound(sha), false);
    if (req.method !== "GET" && req.method !== "HEAD") {
      return this.sendError(req, res, record, { status: 405, message: "Method not allowed" }, false);
    }

    const d = this.digestsOf(repo, file);
    const etag = `"${file.lfs ? d.sha256 : d.gitOid}"`;
    const basename = path.split("/").pop() ?? path;
    const headers: Record<string, string | number> = {
      "Content-Type": isTextFile(path) ? "text/plain; charset=utf-8" : "application/octet-stream",
      "Accept-Ranges": "bytes",
      ETag: etag,
      "X-Repo-Commit": sha,
      "X-Request-Id": requestId(),
      "Content-Disposition": `inline; filename*=UTF-8''${encodeURIComponent(basename)}; filename="${basename}";`,
      "Cache-Control": "public, max-age=3600",
    };
    if (file.lfs) {
      headers["X-Linked-Etag"] = etag;
      headers["X-Linked-Size"] = file.size;
    }
    const range = parseRange(req.headers.range, file.size);
    if (range === "unsatisfiable") {
      record.status = 416;
      res.writeHead(416, { ...headers, "Content-Range": `bytes */${file.size}`, "Content-Length": 0 });
      res.end();
      return;
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? file.size - 1;
    const length = Math.max(0, end - start + 1);
    const status = range === undefined ? 200 : 206;
    if (range !== undefined) headers["Content-Range"] = `bytes ${start}-${end}/${file.size}`;
    headers["Content-Length"] = length;
    record.status = status;
    res.writeHead(status, headers);
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    await this.streamBody(res, record, new ContentReader(repo, path, file.size, file.content), start, length);
  }

  private async streamBody(
    res: ServerResponse,
    record: HubRequest,
    reader: ContentReader,
    start: number,
    length: number,
  ): Promise<void> {
    const drop = this.takeFault("drop-after-bytes");
    const cutAt = drop === undefined ? undefined : Math.max(0, drop.bytes);
    let closed = false;
    res.once("close", () => {
      closed = true;
    });
    let sent = 0;
    while (sent < length) {
      if (closed || this.stopped) return;
      if (cutAt !== undefined && sent >= cutAt) break;
      let n = Math.min(this.limiter.chunkSize(), length - sent);
      if (cutAt !== undefined) n = Math.min(n, cutAt - sent);
      await this.limiter.take(n);
      if (closed || this.stopped) return;
      const chunk = reader.read(start + sent, n);
      const flushed = res.write(chunk);
      sent += n;
      record.bytesSent += n;
      if (!flushed && !closed) await drainOrClose(res);
    }
    if (sent < length) {
      // The fault: the connection goes away mid-body (after what was written has been flushed).
      record.aborted = true;
      res.flushHeaders();
      const socket = res.socket;
      if (socket) {
        socket.end();
        setTimeout(() => socket.destroy(), 200).unref();
      }
      return;
    }
    res.end();
  }

  private sendJson(
    req: IncomingMessage,
    res: ServerResponse,
    record: HubRequest,
    status: number,
    body: unknown,
    extraHeaders: Record<string, string> = {},
  ): void {
    const data = Buffer.from(JSON.stringify(body));
    record.status = status;
    res.writeHead(status, {
      "Content-Type": "application/json; charset=utf-8",
      "Content-Length": data.length,
      "X-Request-Id": requestId(),
      ...extraHeaders,
    });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    record.bytesSent += data.length;
    res.end(data);
  }

  private sendError(
    req: IncomingMessage,
    res: ServerResponse,
    record: HubRequest,
    error: HubError,
    json: boolean,
  ): void {
    const headers: Record<string, string> = {
      "X-Error-Message": error.message,
      "X-Request-Id": requestId(),
      ...(error.code ? { "X-Error-Code": error.code } : {}),
      ...(error.headers ?? {}),
    };
    if (error.status === 401 && error.code !== "GatedRepo") {
      headers["WWW-Authenticate"] = 'Bearer realm="Authentication required", charset="UTF-8"';
    }
    const body = json ? JSON.stringify({ error: error.message }) : error.message;
    const data = Buffer.from(body);
    record.status = error.status;
    res.writeHead(error.status, {
      ...headers,
      "Content-Type": json ? "application/json; charset=utf-8" : "text/plain; charset=utf-8",
      "Content-Length": data.length,
    });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    record.bytesSent += data.length;
    res.end(data);
  }
}

/** Starts a simulated Hub on 127.0.0.1 (free port). */
export async function startSimHub(opts: SimHubOptions = {}): Promise<SimHub> {
  return await SimHub.start(opts);
}
