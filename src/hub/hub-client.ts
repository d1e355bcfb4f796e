import { CodedError } from "../errors.ts";
import { type Logger, redactSecrets } from "../log.ts";
import {
  checkRef,
  isObject,
  licenseOf,
  nextLink,
  parseJson,
  refuseTooMany,
  refuseUnsafePath,
} from "./hub-answers.ts";
import { badResponse, DEFAULT_RETRY_DELAYS_MS, HubHttp, type HubResponse } from "./hub-http.ts";
import {
  firstIssue,
  jsonObjectSchema,
  type ModelInfoAnswer,
  modelInfoSchema,
  type TreeEntry,
  treePageSchema,
} from "./hub-schemas.ts";
import { CODE_CONFIG_FILES, type ModelFile, type ModelInfo, type ModelRef } from "./types.ts";
import { describeOtherWeights, downloadSet, weightFiles } from "./weight-files.ts";

export interface HubClientOptions {
  /** The Hub's base URL (HF_ENDPOINT), e.g. `https://huggingface.co`. */
  endpoint: string;
  /** HF_TOKEN; sent as `Authorization: Bearer …` only when set. */
  token?: string;
  /** Limit for one attempt of one request, headers and body. Default 30 s. */
  timeoutMs?: number;
  log?: Logger;
  /** Waits between attempts after 5xx/429/network failures. Default 250 ms, 1 s, 2 s (4 attempts). */
  retryDelaysMs?: readonly number[];
}

const SHA_40 = /^[0-9a-f]{40}$/;

const MAX_INFO_BYTES = 32 * 1024 * 1024;
const MAX_TREE_PAGE_BYTES = 32 * 1024 * 1024;
const MAX_CONFIG_BYTES = 8 * 1024 * 1024;
const MAX_TREE_PAGES = 1000;

/**
 * Reads what a swap needs to know about a model from the Hugging Face Hub API, pinned to one commit:
 * the revision's sha, every file with its size and LFS sha256, gating and license, config.json, the
 * quantization config, and the other configs that may name the repo's Python (CODE_CONFIG_FILES). Every answer is validated; every failure is a CodedError a person can act on.
 */
export class HubClient {
  private readonly http: HubHttp;
  private readonly token: string | undefined;
  private readonly log: Logger | undefined;

  constructor(opts: HubClientOptions) {
    this.token = opts.token === "" ? undefined : opts.token;
    this.log = opts.log;
    this.http = new HubHttp({
      endpoint: opts.endpoint,
      token: this.token,
      timeoutMs: opts.timeoutMs ?? 30_000,
      retryDelaysMs: opts.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
      log: opts.log,
    });
  }

  async resolve(ref: ModelRef): Promise<ModelInfo> {
    try {
      return await this.resolveUnscrubbed(ref);
    } catch (error) {
      throw this.scrub(error);
    }
  }

  private async resolveUnscrubbed(ref: ModelRef): Promise<ModelInfo> {
    checkRef(ref);
    const started = Date.now();
    const info = await this.modelInfo(ref);
    // The siblings name each file in full, so a refusal names the file itself (the tree may list its folder first).
    for (const s of info.siblings ?? []) refuseUnsafePath(s.rfilename, ref.repo);
    const files = await this.tree(ref, info.sha);

    const weights = weightFiles(files);
    if (weights.length === 0) {
      throw new CodedError(
        "HUB_NO_SAFETENSORS",
        `${ref.repo} has no *.safetensors weights at the top level: ${describeOtherWeights(files)}`,
        "SGLang loads safetensors checkpoints: pick a repository that publishes *.safetensors (often the original model, or a safetensors conversion); GGUF repos are for llama.cpp.",
      );
    }
    if (!files.some((f) => f.path === "config.json")) {
      throw new CodedError(
        "MODEL_CONFIG_UNSUPPORTED",
        `${ref.repo} has no config.json at the top level`,
        "modelswap serves transformers-format checkpoints (config.json beside the safetensors); pick such a repository.",
      );
    }
    const fetched = downloadSet(files);
    refuseTooMany(ref.repo, fetched, weights.length);
    const config = await this.jsonFile(ref, info.sha, "config.json");
    let quantConfig: Record<string, unknown> | undefined;
    if (files.some((f) => f.path === "hf_quant_config.json")) {
      quantConfig = await this.jsonFile(ref, info.sha, "hf_quant_config.json", { optional: true });
    }
    const fromConfig = config.quantization_config;
    if (quantConfig === undefined && isObject(fromConfig)) quantConfig = fromConfig;
    // every config that may name the repo's Python, so the plan decides from all of them (at most four requests)
    const codeConfigs: Record<string, Record<string, unknown>> = {};
    for (const name of CODE_CONFIG_FILES) {
      if (files.some((f) => f.path === name)) codeConfigs[name] = await this.jsonFile(ref, info.sha, name);
    }

    const result: ModelInfo = {
      repo: ref.repo,
      revision: ref.revision,
      sha: info.sha,
      files: fetched.files,
      totalBytes: fetched.files.reduce((sum, f) => sum + f.size, 0),
      weightBytes: weights.reduce((sum, f) => sum + f.size, 0),
      ...(fetched.left.files > 0 ? { notFetched: fetched.left } : {}),
      gated: info.gated === true ? "auto" : (info.gated ?? false),
      license: licenseOf(info),
      config,
      quantConfig,
      codeConfigs,
    };
    this.log?.info(
      {
        repo: ref.repo,
        revision: ref.revision,
        sha: result.sha,
        files: files.length,
        fetched: fetched.files.length,
        weightBytes: result.weightBytes,
        gated: result.gated,
        ms: Date.now() - started,
      },
      "model resolved",
    );
    return result;
  }

  private async modelInfo(ref: ModelRef): Promise<ModelInfoAnswer> {
    const url = new URL(
      `${this.http.base}/api/models/${ref.repo}/revision/${encodeURIComponent(ref.revision)}`,
    );
    const what = `the model info of ${ref.repo}@${ref.revision}`;
    const res = await this.http.get(url, { maxBytes: MAX_INFO_BYTES, what });
    if (res.status !== 200) throw this.failure(res, ref);
    const parsed = modelInfoSchema.safeParse(parseJson(res, what));
    if (!parsed.success) throw badResponse(`${what}: ${firstIssue(parsed.error)}`);
    const info = parsed.data;
    if (SHA_40.test(ref.revision) && info.sha !== ref.revision) {
      throw badResponse(`${what}: asked for commit ${ref.revision}, got ${info.sha}`);
    }
    return info;
  }

  /** Every file of the commit (recursive listing, all pages), checked to be safe as host paths. */
  private async tree(ref: ModelRef, sha: string): Promise<ModelFile[]> {
    const what = `the file list of ${ref.repo}@${sha.slice(0, 12)}`;
    let url: URL | undefined = new URL(`${this.http.base}/api/models/${ref.repo}/tree/${sha}`);
    url.searchParams.set("recursive", "true");
    url.searchParams.set("expand", "false");
    const seen = new Set<string>();
    const entries: TreeEntry[] = [];
    while (url !== undefined) {
      if (seen.has(url.href) || seen.size >= MAX_TREE_PAGES) {
        throw badResponse(`${what}: the pages never end (${seen.size} pages read)`);
      }
      seen.add(url.href);
      const res = await this.http.get(url, { maxBytes: MAX_TREE_PAGE_BYTES, what });
      if (res.status !== 200) throw this.failure(res, ref);
      const page = treePageSchema.safeParse(parseJson(res, what));
      if (!page.success) throw badResponse(`${what}: ${firstIssue(page.error)}`);
      entries.push(...page.data);
      const next = nextLink(res.headers.get("link"));
      url = next === undefined ? undefined : new URL(next, res.url);
    }
    const files: ModelFile[] = [];
    const paths = new Set<string>();
    for (const entry of entries) {
      refuseUnsafePath(entry.path, ref.repo);
      if (entry.type !== "file") continue;
      if (paths.has(entry.path)) throw badResponse(`${what}: ${JSON.stringify(entry.path)} is listed twice`);
      paths.add(entry.path);
      if (entry.lfs != null && entry.lfs.size !== entry.size) {
        throw badResponse(`${what}: ${entry.path} has size ${entry.size} but LFS size ${entry.lfs.size}`);
      }
      files.push({
        path: entry.path,
        size: entry.size,
        ...(entry.lfs != null
          ? { sha256: entry.lfs.oid }
          : entry.oid === undefined
            ? {}
            : { oid: entry.oid }),
      });
    }
    for (const path of paths) {
      const parts = path.split("/");
      for (let i = 1; i < parts.length; i++) {
        const dir = parts.slice(0, i).join("/");
        if (paths.has(dir)) throw badResponse(`${what}: ${dir} is both a file and a folder`);
      }
    }
    return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** A JSON object file at the commit; `optional`: a 404 gives undefined. */
  private async jsonFile(ref: ModelRef, sha: string, path: string): Promise<Record<string, unknown>>;
  private async jsonFile(
    ref: ModelRef,
    sha: string,
    path: string,
    opts: { optional: true },
  ): Promise<Record<string, unknown> | undefined>;
  private async jsonFile(
    ref: ModelRef,
    sha: string,
    path: string,
    opts?: { optional: true },
  ): Promise<Record<string, unknown> | undefined> {
    const url = new URL(`${this.http.base}/${ref.repo}/resolve/${sha}/${encodeURIComponent(path)}`);
    const what = `${path} of ${ref.repo}`;
    const res = await this.http.get(url, { maxBytes: MAX_CONFIG_BYTES, what });
    if (res.status === 404 && res.headers.get("x-error-code") === "EntryNotFound") {
      if (opts?.optional) return undefined;
      throw badResponse(`${what}: the file list names it but the Hub says it does not exist`);
    }
    if (res.status !== 200) throw this.failure(res, ref);
    const parsed = jsonObjectSchema.safeParse(parseJson(res, what));
    if (!parsed.success) throw badResponse(`${what} is not a JSON object`);
    return parsed.data;
  }

  /** The CodedError for a non-200 answer (5xx never gets here: the HTTP layer retried it). */
  private failure(res: HubResponse, ref: ModelRef): CodedError {
    const code = res.headers.get("x-error-code") ?? undefined;
    const hubMessage = this.http.redact(res.headers.get("x-error-message") ?? "");
    this.log?.warn(
      { repo: ref.repo, revision: ref.revision, status: res.status, errorCode: code, hubMessage },
      "hub refused a request",
    );
    const page = `${this.http.base}/${ref.repo}`;
    const invalidCredentials = res.status === 401 && /invalid credentials/i.test(hubMessage);
    if (invalidCredentials && this.token !== undefined) {
      return new CodedError(
        "HUB_TOKEN_INVALID",
        "The Hub refused HF_TOKEN: invalid credentials",
        `Create a read token at ${this.http.base}/settings/tokens and set HF_TOKEN to it (or unset HF_TOKEN for public models).`,
      );
    }
    if (code === "GatedRepo") {
      if (res.status === 401 || this.token === undefined) {
        return new CodedError(
          "HUB_GATED",
          `${ref.repo} is a gated model and HF_TOKEN is not set`,
          `Set HF_TOKEN with a token that accepted the license at ${page}`,
        );
      }
      return new CodedError(
        "HUB_GATED",
        `${ref.repo} is a gated model and the account of HF_TOKEN has not been granted access`,
        `Request access on the model page ${page} with the account the token belongs to; once it is granted, retry.`,
      );
    }
    if (code === "RevisionNotFound") {
      return new CodedError(
        "HUB_REVISION_NOT_FOUND",
        `Revision "${ref.revision}" does not exist in ${ref.repo}`,
        `Use a branch, tag or commit listed at ${page}/commits/main, or leave the revision out to use main.`,
      );
    }
    if (code === "RepoNotFound" || res.status === 401 || (res.status === 404 && code === undefined)) {
      return new CodedError(
        "HUB_NOT_FOUND",
        `Model ${ref.repo} was not found on the Hub: the name may be misspelled, or the repository is private`,
        this.token === undefined
          ? `Check the name at ${page} (org and name as on the model page); if the repository is private, set HF_TOKEN to a token that can read it.`
          : `Check the name at ${page} (org and name as on the model page); if the repository is private, make sure the account of HF_TOKEN can read it.`,
      );
    }
    if (res.status === 403 && this.token !== undefined) {
      return new CodedError(
        "HUB_TOKEN_INVALID",
        `The Hub refused HF_TOKEN access to ${ref.repo} (HTTP 403)`,
        "If HF_TOKEN is a fine-grained token, give it read access to public gated repositories and to this one; or use a read token.",
      );
    }
    const said = hubMessage === "" ? "" : ` (the Hub said: ${JSON.stringify(hubMessage.slice(0, 200))})`;
    return badResponse(`unexpected HTTP ${res.status} for ${ref.repo}${said}`);
  }

  /** The token never leaves in an error, whatever the Hub echoed into it. */
  private scrub(error: unknown): unknown {
    if (this.token === undefined || !(error instanceof CodedError)) return error;
    const secrets = [this.token];
    const message = redactSecrets(error.message, secrets);
    const fix = redactSecrets(error.fix, secrets);
    if (message === error.message && fix === error.fix) return error;
    return new CodedError(error.code, message, fix);
  }
}
