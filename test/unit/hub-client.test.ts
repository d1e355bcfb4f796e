import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CodedError, type ErrorCode } from "../../src/errors.ts";
import { HubClient, type HubClientOptions } from "../../src/hub/hub-client.ts";
import { showName } from "../../src/hub/hub-schemas.ts";
import type { ModelInfo, ModelRef } from "../../src/hub/types.ts";
import { createLogger } from "../../src/log.ts";
import {
  makeModel,
  SIM_HUB_TOKEN,
  type SimHub,
  type SimModel,
  startSimHub,
} from "../../testbench/hub/index.ts";

/** A second valid token that is not approved for the gated Llama. */
const OTHER_TOKEN = "hf_OtherValidTokenWithoutLlamaAccess0000";
const WRONG_TOKEN = "hf_ThisTokenIsUnknownToTheHub000000000000";
const FAST = [5, 5, 5];

let hub: SimHub;
let qwen: SimModel;
let llama: SimModel;
let fp8: SimModel;

beforeAll(async () => {
  hub = await startSimHub({ tokens: [SIM_HUB_TOKEN, OTHER_TOKEN] });
  qwen = hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  llama = hub.addModel(makeModel("llama-bf16-small", { approvedTokens: [SIM_HUB_TOKEN] }));
  fp8 = hub.addModel(makeModel("qwen3-fp8-dense"));
});
afterAll(() => hub.stop());
afterEach(() => {
  hub.setFault(null);
  hub.clearRequests();
});

/** A client with a captured log (every record as text). */
function client(opts: Partial<HubClientOptions> = {}, endpoint = hub.url) {
  const lines: string[] = [];
  const log = createLogger({ level: "trace", destination: { write: (line: string) => lines.push(line) } });
  return { client: new HubClient({ endpoint, log, ...opts }), logText: () => lines.join("") };
}

const ref = (repo: string, revision = "main"): ModelRef => ({ repo, revision });

async function failure(promise: Promise<unknown>, code: ErrorCode): Promise<CodedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CodedError);
  const coded = error as CodedError;
  expect(coded.code, `${coded.message} / ${coded.fix}`).toBe(code);
  return coded;
}

/** Everything about an error a person or a log could ever see. */
function errorText(error: CodedError): string {
  return [error.message, error.fix, error.stack ?? "", String(error), JSON.stringify(error)].join("\n");
}

describe("HubClient.resolve against the simulated Hub", () => {
  it("pins a model to its commit: files, sizes, LFS sha256, weights, license, config and hf_quant_config", async () => {
    const { client: c } = client();
    const info = await c.resolve(ref(qwen.id));

    expect(info.sha).toBe(qwen.sha);
    expect(info.repo).toBe(qwen.id);
    expect(info.revision).toBe("main");
    expect(info.files.map((f) => [f.path, f.size])).toEqual(qwen.files.map((f) => [f.path, f.size]));
    expect(info.notFetched).toBeUndefined();
    const shards = info.files.filter((f) => f.path.endsWith(".safetensors"));
    expect(shards.map((f) => f.path)).toEqual([
      "model-00001-of-00003.safetensors",
      "model-00002-of-00003.safetensors",
      "model-00003-of-00003.safetensors",
    ]);
    for (const shard of shards) expect(shard.sha256).toBe(hub.fileDigests(qwen.id, shard.path).sha256);
    expect(info.files.find((f) => f.path === "config.json")?.sha256).toBeUndefined();
    expect(info.weightBytes).toBe(6 * 1024 * 1024);
    expect(info.totalBytes).toBe(qwen.totalBytes);
    expect(info.gated).toBe(false);
    expect(info.license).toBe("apache-2.0");
    expect(info.config.architectures).toEqual(["Qwen3_5MoeForConditionalGeneration"]);
    expect(info.quantConfig).toMatchObject({
      producer: { name: "modelopt" },
      quantization: { quant_algo: "NVFP4" },
    });

    const requests = hub.requests();
    expect(requests.map((r) => `${r.path}?${r.query}`)).toEqual([
      `/api/models/${qwen.id}/revision/main?`,
      `/api/models/${qwen.id}/tree/${qwen.sha}?recursive=true&expand=false`,
      `/${qwen.id}/resolve/${qwen.sha}/config.json?`,
      `/${qwen.id}/resolve/${qwen.sha}/hf_quant_config.json?`,
      // every config that may name the repo's Python, where the repo has one
      `/${qwen.id}/resolve/${qwen.sha}/tokenizer_config.json?`,
      `/${qwen.id}/resolve/${qwen.sha}/preprocessor_config.json?`,
    ]);
    expect(Object.keys(info.codeConfigs)).toEqual(["tokenizer_config.json", "preprocessor_config.json"]);
    expect(info.codeConfigs["tokenizer_config.json"]).toMatchObject({ tokenizer_class: "Qwen2Tokenizer" });
    expect(requests.every((r) => r.status === 200 && r.token === undefined)).toBe(true);
  });

  it("takes the quantization config from config.json when there is no hf_quant_config.json", async () => {
    const info = await client().client.resolve(ref(fp8.id));
    expect(info.quantConfig).toEqual({
      activation_scheme: "dynamic",
      fmt: "e4m3",
      quant_method: "fp8",
      weight_block_size: [128, 128],
    });
    expect(hub.requests().some((r) => r.path.endsWith("hf_quant_config.json"))).toBe(false);
  });

  it("follows the tree listing's Link pagination to the last page", async () => {
    const paged = await startSimHub({ treePageSize: 4 });
    try {
      const model = paged.addModel(makeModel("kimi-k2-int4"));
      const info = await client({}, paged.url).client.resolve(ref(model.id));
      // every file was listed: what is fetched and what is left make the whole repository
      expect(info.files.length + (info.notFetched?.files ?? 0)).toBe(model.files.length);
      expect(info.files.filter((f) => f.path.endsWith(".safetensors"))).toHaveLength(
        model.files.filter((f) => f.path.endsWith(".safetensors")).length,
      );
      const treeRequests = paged.requests().filter((r) => r.path.includes("/tree/"));
      expect(treeRequests.length).toBe(Math.ceil(model.files.length / 4));
      expect(treeRequests.slice(1).every((r) => /cursor=\d+/.test(r.query))).toBe(true);
      expect(info.license).toBe("other");
      expect(info.quantConfig).toMatchObject({ quant_method: "compressed-tensors" });
    } finally {
      await paged.stop();
    }
  });

  it("resolves branches, tags, refs/pr/N, sha prefixes and full shas to the commit, and refuses unknown revisions", async () => {
    const shaA = "a".repeat(40);
    const shaB = "b".repeat(39) + "1";
    const shaC = "c".repeat(40);
    const model = hub.addModel(
      makeModel("tiny", {
        id: "sim-org/revisions",
        revisions: { main: shaA, "v1.0": shaB, "refs/pr/1": shaC },
      }),
    );
    const c = client().client;
    expect((await c.resolve(ref(model.id))).sha).toBe(shaA);
    const tagged = await c.resolve(ref(model.id, "v1.0"));
    expect(tagged).toMatchObject({ sha: shaB, revision: "v1.0" });
    expect((await c.resolve(ref(model.id, "refs/pr/1"))).sha).toBe(shaC);
    expect((await c.resolve(ref(model.id, shaB.slice(0, 10)))).sha).toBe(shaB);
    expect((await c.resolve(ref(model.id, shaB))).sha).toBe(shaB);
    // Every later request names the commit, never the branch.
    const later = hub.requests().filter((r) => !r.path.includes("/revision/"));
    expect(later.every((r) => [shaA, shaB, shaC].some((sha) => r.path.includes(sha)))).toBe(true);

    const error = await failure(c.resolve(ref(model.id, "no-such-branch")), "HUB_REVISION_NOT_FOUND");
    expect(error.message).toBe(`Revision "no-such-branch" does not exist in ${model.id}`);
    expect(error.fix).toContain(`${hub.url}/${model.id}/commits/main`);
  });

  it("says a missing repo may be misspelled or private, with and without a token", async () => {
    const anonymous = await failure(client().client.resolve(ref("sim-org/nope")), "HUB_NOT_FOUND");
    expect(anonymous.message).toContain("misspelled");
    expect(anonymous.message).toContain("private");
    expect(anonymous.fix).toContain("set HF_TOKEN");
    expect(hub.requests()[0]?.status).toBe(401);

    const withToken = await failure(
      client({ token: SIM_HUB_TOKEN }).client.resolve(ref("sim-org/nope")),
      "HUB_NOT_FOUND",
    );
    expect(withToken.fix).toContain("account of HF_TOKEN can read it");
    expect(hub.requests()[1]?.status).toBe(404);
    expect(errorText(withToken)).not.toContain(SIM_HUB_TOKEN);
  });

  it("sees a private repo only with a token", async () => {
    const secret = hub.addModel(makeModel("tiny", { id: "sim-org/private-tiny", private: true }));
    await failure(client().client.resolve(ref(secret.id)), "HUB_NOT_FOUND");
    const info = await client({ token: SIM_HUB_TOKEN }).client.resolve(ref(secret.id));
    expect(info.sha).toBe(secret.sha);
  });

  it("refuses a gated model without a token, pointing at the model page for the license", async () => {
    const { client: c, logText } = client();
    const error = await failure(c.resolve(ref(llama.id)), "HUB_GATED");
    expect(error.message).toBe(`${llama.id} is a gated model and HF_TOKEN is not set`);
    expect(error.fix).toBe(`Set HF_TOKEN with a token that accepted the license at ${hub.url}/${llama.id}`);
    // Info and tree are public on the Hub; the file download is what is refused.
    expect(hub.requests().map((r) => r.status)).toEqual([200, 200, 401]);
    expect(logText()).toContain("hub refused a request");
  });

  it("refuses a gated model whose token has no access, asking to request access; the token never leaks", async () => {
    const { client: c, logText } = client({ token: OTHER_TOKEN });
    const error = await failure(c.resolve(ref(llama.id)), "HUB_GATED");
    expect(error.message).toContain("has not been granted access");
    expect(error.fix).toContain(`Request access on the model page ${hub.url}/${llama.id}`);
    expect(hub.requests().at(-1)?.status).toBe(403);
    expect(hub.requests().every((r) => r.token === OTHER_TOKEN)).toBe(true);
    expect(errorText(error)).not.toContain(OTHER_TOKEN);
    expect(logText()).toContain("GatedRepo");
    expect(logText()).not.toContain(OTHER_TOKEN);
  });

  it("resolves a gated model with an approved token, sending it as a Bearer token on every request", async () => {
    const { client: c, logText } = client({ token: SIM_HUB_TOKEN });
    const info = await c.resolve(ref(llama.id));
    expect(info).toMatchObject({ gated: "manual", license: "llama3.2", quantConfig: undefined });
    expect(info.weightBytes).toBe(info.files.find((f) => f.path === "model.safetensors")?.size);
    // Meta's own format in original/ (on the real 405B, another 800 GB) is not downloaded
    expect(info.files.some((f) => f.path.startsWith("original/"))).toBe(false);
    expect(info.notFetched).toEqual({
      files: 3,
      bytes: llama.files.filter((f) => f.path.startsWith("original/")).reduce((n, f) => n + f.size, 0),
    });
    expect(info.files.some((f) => f.path === "USE_POLICY.md")).toBe(true);
    const requests = hub.requests();
    // model info, the file list, config.json and tokenizer_config.json
    expect(requests.length).toBe(4);
    expect(requests.every((r) => r.token === SIM_HUB_TOKEN && r.tokenValid)).toBe(true);
    expect(logText()).toContain("model resolved");
    expect(logText()).not.toContain(SIM_HUB_TOKEN);
  });

  it("reports a token the Hub does not know, without printing it", async () => {
    const { client: c, logText } = client({ token: WRONG_TOKEN });
    const error = await failure(c.resolve(ref(qwen.id)), "HUB_TOKEN_INVALID");
    expect(error.message).toBe("The Hub refused HF_TOKEN: invalid credentials");
    expect(error.fix).toContain(`${hub.url}/settings/tokens`);
    expect(errorText(error)).not.toContain(WRONG_TOKEN);
    expect(logText()).toContain("Invalid credentials");
    expect(logText()).not.toContain(WRONG_TOKEN);
  });

  it("refuses a repository without safetensors, naming the formats it has", async () => {
    const ggufOnly: SimModel = {
      id: "sim-org/old-formats",
      files: [
        { path: "config.json", size: 0, content: '{"architectures":["LlamaForCausalLM"]}' },
        { path: "pytorch_model-00001-of-00002.bin", size: 1000 },
        { path: "pytorch_model-00002-of-00002.bin", size: 1000 },
        { path: "model-q4_k_m.gguf", size: 2000 },
        { path: "original/model.safetensors", size: 500 },
      ],
    };
    hub.addModel(ggufOnly);
    const error = await failure(client().client.resolve(ref(ggufOnly.id)), "HUB_NO_SAFETENSORS");
    expect(error.message).toBe(
      "sim-org/old-formats has no *.safetensors weights at the top level: only .bin (2 files), .gguf (1 file) and .safetensors only in subfolders (original/)",
    );
    expect(error.fix).toContain("safetensors");
    expect(hub.requests().some((r) => r.kind === "resolve")).toBe(false);

    hub.addModel({ id: "sim-org/empty", files: [{ path: "README.md", size: 0, content: "# empty\n" }] });
    const empty = await failure(client().client.resolve(ref("sim-org/empty")), "HUB_NO_SAFETENSORS");
    expect(empty.message).toContain("no weight files at all (README.md)");
  });

  it("downloads the weights and the files beside them the engine reads, and counts the rest of a crowded repository", async () => {
    const crowded = makeModel("qwen3.5-moe-nvfp4", { id: "sim-org/crowded" });
    const files: SimModel["files"] = [
      ...crowded.files,
      { path: "consolidated.safetensors", size: 3000 },
      { path: "pytorch_model.bin", size: 3000 },
      { path: "modeling_crowded.py", size: 0, content: "# remote code\n" },
      { path: "LICENSE", size: 0, content: "Apache-2.0\n" },
      { path: "figure.PNG", size: 700 },
      { path: "docs/guide.pdf", size: 900 },
    ];
    for (let i = 0; i < 5000; i++) files.push({ path: `assets/img-${i}.jpg`, size: 10 });
    hub.addModel({ ...crowded, files });
    const info = await client().client.resolve(ref("sim-org/crowded"));
    const paths = info.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining(["chat_template.jinja", "modeling_crowded.py", "LICENSE", "README.md"]),
    );
    expect(paths.filter((p) => p.endsWith(".safetensors"))).toEqual([
      "model-00001-of-00003.safetensors",
      "model-00002-of-00003.safetensors",
      "model-00003-of-00003.safetensors",
    ]);
    for (const left of ["consolidated.safetensors", "pytorch_model.bin", "figure.PNG", "docs/guide.pdf"])
      expect(paths).not.toContain(left);
    expect(info.notFetched).toEqual({
      files: 5000 + 4,
      bytes: 5000 * 10 + 3000 + 3000 + 700 + 900,
    });
    expect(info.totalBytes).toBe(info.files.reduce((n, f) => n + f.size, 0));
  });

  it("refuses a repository with more files to download than a record keeps, before reading any file, saying what to do", async () => {
    const base = makeModel("tiny", { id: "sim-org/many-shards" });
    const shards = (n: number, name: (i: number) => string) =>
      Array.from({ length: n }, (_, i) => ({ path: name(i), size: 10 }));
    hub.addModel({
      ...base,
      files: [
        ...base.files.filter((f) => !f.path.endsWith(".safetensors")),
        ...shards(1001, (i) => `model-${String(i + 1).padStart(5, "0")}-of-01001.safetensors`),
      ],
    });
    const many = await failure(client().client.resolve(ref("sim-org/many-shards")), "HUB_TOO_MANY_FILES");
    expect(many.message).toMatch(
      /^sim-org\/many-shards has [\d,]+ files to download \(at most 1,000\): 1,001 safetensors weight files and \d+ other files at its top level/,
    );
    expect(many.fix).toContain("max_shard_size");
    expect(hub.requests().some((r) => r.kind === "resolve")).toBe(false);

    // fewer files, but names so long that their list would not fit either
    hub.addModel({
      ...base,
      id: "sim-org/long-names",
      files: [
        ...base.files.filter((f) => !f.path.endsWith(".safetensors")),
        ...shards(600, (i) => `${"w".repeat(200)}-${String(i + 1).padStart(5, "0")}.safetensors`),
      ],
    });
    const long = await failure(client().client.resolve(ref("sim-org/long-names")), "HUB_TOO_MANY_FILES");
    expect(long.message).toMatch(/whose list with sizes and checksums takes \d+ KB \(at most 128 KB\)/);
  });

  it("refuses a repository without config.json", async () => {
    hub.addModel({ id: "sim-org/no-config", files: [{ path: "model.safetensors", size: 4096 }] });
    const error = await failure(
      client().client.resolve(ref("sim-org/no-config")),
      "MODEL_CONFIG_UNSUPPORTED",
    );
    expect(error.message).toBe("sim-org/no-config has no config.json at the top level");
  });

  it("reads the license from a license: tag when the card has none", async () => {
    const tiny = makeModel("tiny", { id: "sim-org/tag-license" });
    hub.addModel({ ...tiny, license: undefined, cardData: {}, tags: ["llama", "license:mit"] });
    expect((await client().client.resolve(ref("sim-org/tag-license"))).license).toBe("mit");
  });

  it("retries 5xx answers and succeeds when the Hub recovers", async () => {
    hub.setFault({ kind: "status", status: 502, times: 2 });
    const { client: c, logText } = client({ retryDelaysMs: FAST });
    const info = await c.resolve(ref(fp8.id));
    expect(info.sha).toBe(fp8.sha);
    const statuses = hub.requests().map((r) => r.status);
    expect(statuses).toEqual([502, 502, 200, 200, 200, 200]);
    expect(logText()).toContain("hub request failed, retrying");
  });

  it("retries with 250 ms, 1 s, 2 s of backoff, then says the Hub is unavailable", async () => {
    hub.setFault({ kind: "status", status: 503, times: 100 });
    const { client: c, logText } = client({ token: SIM_HUB_TOKEN });
    const error = await failure(c.resolve(ref(qwen.id)), "HUB_UNAVAILABLE");
    expect(error.message).toBe(
      `The Hugging Face Hub at ${hub.url} is unavailable: HTTP 503 on 4 attempts to read the model info of ${qwen.id}@main`,
    );
    expect(error.fix).toContain(hub.url);
    const starts = hub.requests().map((r) => r.startedAt);
    expect(starts.length).toBe(4);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    // each wait is at least its backoff; the upper bound only catches a unit mix-up (seconds read as ms):
    // a loaded 2-core machine has stretched the 2 s wait to 3.8 s, so a tight bound is a timing test
    [250, 1000, 2000].forEach((delay, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(delay - 5);
      expect(gaps[i]).toBeLessThan(delay + 10_000);
    });
    expect(errorText(error)).not.toContain(SIM_HUB_TOKEN);
    expect(logText()).toContain("hub unavailable");
    expect(logText()).not.toContain(SIM_HUB_TOKEN);
  });

  it("treats 429 and dropped connections as transient too", async () => {
    hub.setFault({ kind: "status", status: 429, times: 1, on: "resolve" });
    expect((await client({ retryDelaysMs: FAST }).client.resolve(ref(fp8.id))).sha).toBe(fp8.sha);

    hub.setFault({ kind: "reset" });
    const error = await failure(
      client({ retryDelaysMs: FAST }).client.resolve(ref(fp8.id)),
      "HUB_UNAVAILABLE",
    );
    expect(error.message).toMatch(/connection closed before the answer was complete|connection failed/);
  });

  it("says the Hub is unavailable when nothing listens", async () => {
    const gone = await startSimHub();
    await gone.stop();
    const error = await failure(
      client({ retryDelaysMs: FAST }, gone.url).client.resolve(ref(fp8.id)),
      "HUB_UNAVAILABLE",
    );
    expect(error.message).toContain("connection refused (ECONNREFUSED) on 4 attempts");
    expect(error.cause).toBeDefined();
  });

  it("refuses a malformed model reference before any request", async () => {
    const c = client().client;
    for (const repo of ["nope", "a/b/c", "../etc", "org/..", "org/-x", "org/na me", "org/x;rm"]) {
      await failure(c.resolve(ref(repo)), "INPUT_INVALID");
    }
    for (const revision of ["", "../main", "main/", "-x", "a b", "v1\n"]) {
      await failure(c.resolve(ref(qwen.id, revision)), "INPUT_INVALID");
    }
    expect(hub.requests()).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// A hostile or broken Hub: answers the tests write by hand.

interface FakeRequest {
  path: string;
  authorization: string | undefined;
}

type Handler = (req: IncomingMessage, res: ServerResponse, path: string) => void;

async function startFake(handler: Handler): Promise<{
  url: string;
  requests: FakeRequest[];
  stop: () => Promise<void>;
}> {
  const requests: FakeRequest[] = [];
  const server: Server = createServer((req, res) => {
    const path = req.url ?? "/";
    requests.push({ path, authorization: req.headers.authorization });
    handler(req, res, path);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

const SHA = "0123456789abcdef0123456789abcdef01234567";
const REPO = "evil-org/model";
const LFS = "f".repeat(64);
const CONFIG = { architectures: ["LlamaForCausalLM"], model_type: "llama" };

function sendJson(res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  const data = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(200, { "Content-Type": "application/json", ...headers });
  res.end(data);
}

/** A Hub that answers normally except for what `override` changes. */
function fakeHub(
  override: {
    info?: unknown;
    tree?: (path: string, res: ServerResponse) => void;
    config?: (res: ServerResponse) => void;
    /** Other files at the commit, by path. */
    files?: Record<string, (res: ServerResponse) => void>;
  } = {},
): Handler {
  return (_req, res, path) => {
    if (path.startsWith(`/api/models/${REPO}/revision/`)) {
      return sendJson(res, override.info ?? { id: REPO, sha: SHA, gated: false, siblings: [] });
    }
    if (path.startsWith(`/api/models/${REPO}/tree/`)) {
      if (override.tree) return override.tree(path, res);
      return sendJson(res, [
        { type: "file", path: "config.json", size: 60, oid: "x" },
        { type: "file", path: "model.safetensors", size: 100, lfs: { oid: LFS, size: 100 } },
      ]);
    }
    if (path === `/${REPO}/resolve/${SHA}/config.json`) {
      if (override.config) return override.config(res);
      return sendJson(res, CONFIG);
    }
    const file = override.files?.[path.slice(`/${REPO}/resolve/${SHA}/`.length)];
    if (path.startsWith(`/${REPO}/resolve/${SHA}/`) && file !== undefined) return file(res);
    res.writeHead(404, { "X-Error-Code": "EntryNotFound" });
    res.end("Entry not found");
  };
}

async function withFake(
  handler: Handler,
  run: (c: HubClient, fake: { url: string; requests: FakeRequest[] }) => Promise<void>,
  opts: Partial<HubClientOptions> = {},
): Promise<void> {
  const fake = await startFake(handler);
  try {
    await run(new HubClient({ endpoint: fake.url, retryDelaysMs: FAST, ...opts }), fake);
  } finally {
    await fake.stop();
  }
}

describe("HubClient.resolve against a hostile or broken Hub", () => {
  it("works against the hand-written Hub when nothing is wrong", async () => {
    await withFake(fakeHub(), async (c) => {
      const info: ModelInfo = await c.resolve(ref(REPO));
      expect(info).toMatchObject({ sha: SHA, weightBytes: 100, totalBytes: 160, license: undefined });
      // a file kept in git carries its blob id (in-place swaps compare tokenizer files by it); LFS its sha256
      expect(info.files).toEqual([
        { path: "config.json", size: 60, oid: "x" },
        { path: "model.safetensors", size: 100, sha256: LFS },
      ]);
    });
  });

  it("treats a 404 for a listed hf_quant_config.json as absent and falls back to quantization_config", async () => {
    const quantization_config = { quant_method: "fp8" };
    const tree = (_p: string, res: ServerResponse) =>
      sendJson(res, [
        { type: "file", path: "config.json", size: 60 },
        { type: "file", path: "hf_quant_config.json", size: 10 },
        { type: "file", path: "model.safetensors", size: 100, lfs: { oid: LFS, size: 100 } },
      ]);
    const config = (res: ServerResponse) => sendJson(res, { ...CONFIG, quantization_config });
    await withFake(fakeHub({ tree, config }), async (c, fake) => {
      const info = await c.resolve(ref(REPO));
      expect(info.quantConfig).toEqual(quantization_config);
      expect(fake.requests.at(-1)?.path).toBe(`/${REPO}/resolve/${SHA}/hf_quant_config.json`);
    });
  });

  it("reads every config that may name the repo's Python when the file list has it, and refuses one it cannot read", async () => {
    const listed =
      (...names: string[]) =>
      (_p: string, res: ServerResponse) =>
        sendJson(res, [
          { type: "file", path: "config.json", size: 60 },
          ...names.map((path) => ({ type: "file", path, size: 40 })),
          { type: "file", path: "model.safetensors", size: 100, lfs: { oid: LFS, size: 100 } },
        ]);
    const tokenizer = { auto_map: { AutoTokenizer: ["tokenization_x.XTokenizer", null] } };
    const files = {
      "tokenizer_config.json": (res: ServerResponse) => sendJson(res, tokenizer),
      "processor_config.json": (res: ServerResponse) => sendJson(res, { processor_class: "XProcessor" }),
      "sub/tokenizer_config.json": (res: ServerResponse) => sendJson(res, tokenizer),
    };
    const tree = listed(
      "tokenizer_config.json",
      "processor_config.json",
      "sub/tokenizer_config.json",
      "generation_config.json",
    );
    await withFake(fakeHub({ tree, files }), async (c, fake) => {
      const info = await c.resolve(ref(REPO));
      expect(info.codeConfigs).toEqual({
        "tokenizer_config.json": tokenizer,
        "processor_config.json": { processor_class: "XProcessor" },
      });
      // one request per config the repo has at its top level, where the engines read them; nothing else
      expect(fake.requests.slice(3).map((r) => r.path)).toEqual([
        `/${REPO}/resolve/${SHA}/tokenizer_config.json`,
        `/${REPO}/resolve/${SHA}/processor_config.json`,
      ]);
    });
    // listed but missing, or not a JSON object: what it names cannot be known, so nothing is planned
    await withFake(fakeHub({ tree: listed("tokenizer_config.json") }), async (c) => {
      const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
      expect(error.message).toContain(
        "tokenizer_config.json of evil-org/model: the file list names it but the Hub says it does not exist",
      );
    });
    const notJson = { "preprocessor_config.json": (res: ServerResponse) => sendJson(res, "[1,") };
    await withFake(fakeHub({ tree: listed("preprocessor_config.json"), files: notJson }), async (c) => {
      const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
      expect(error.message).toContain("preprocessor_config.json of evil-org/model is not JSON");
    });
  });

  const hostile: Array<[string, string]> = [
    ["../../home/modelswap/.bashrc", 'a ".." segment'],
    ["/etc/cron.d/evil", "an absolute path"],
    ["model\0.safetensors", "a NUL byte"],
    ["model\n.safetensors", "a newline"],
    ["weights\\model.safetensors", "a backslash"],
    ["a/./b.safetensors", 'a "." segment'],
    ["a//b.safetensors", "an empty segment"],
    ["x\x1b[31m.json", "a control character"],
    ["$(touch pwned).json", 'contains "$"'],
    ["`touch pwned`.json", 'contains "`"'],
    ["x;touch pwned.json", 'contains ";"'],
    ["--output=/etc/passwd", 'starts with "-"'],
    ["c\u043enfig.json", "non-ASCII character U+043E"],
    ["model\u202Esnoj.safetensors", "non-ASCII character U+202E"],
    [`${"x".repeat(300)}.json`, "longer than 255"],
    [".cache/huggingface/download/model.safetensors.metadata", "inside .cache/"],
  ];
  for (const [name, reason] of hostile) {
    it(`refuses a file named ${JSON.stringify(name)} (${reason})`, async () => {
      const tree = (_p: string, res: ServerResponse) =>
        sendJson(res, [
          { type: "file", path: "config.json", size: 60 },
          { type: "file", path: name, size: 100, lfs: { oid: LFS, size: 100 } },
        ]);
      await withFake(fakeHub({ tree }), async (c, fake) => {
        const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
        expect(error.message).toContain(showName(name));
        expect(error.message).toContain(reason);
        expect(error.message).toContain("file names become paths on the host");
        expect(error.fix).toMatch(/Nothing was downloaded or changed/);
        expect(fake.requests.some((r) => r.path.includes("/resolve/"))).toBe(false);
      });
    });
  }

  it("never takes the model's name from the Hub: a hostile id in the answer changes nothing", async () => {
    const info = { id: "../../$(reboot);`id`\n-rf", sha: SHA, gated: false, siblings: [] };
    await withFake(fakeHub({ info }), async (c) => {
      const resolved = await c.resolve(ref(REPO));
      expect(resolved.repo).toBe(REPO);
      expect(JSON.stringify(resolved)).not.toContain("reboot");
    });
  });

  it("refuses hostile names in the model info's siblings and in directory entries", async () => {
    const info = { id: REPO, sha: SHA, siblings: [{ rfilename: "../x.safetensors" }] };
    await withFake(fakeHub({ info }), async (c) => {
      const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
      expect(error.message).toContain('"../x.safetensors"');
    });
    const tree = (_p: string, res: ServerResponse) =>
      sendJson(res, [{ type: "directory", path: "..", oid: "x", size: 0 }]);
    await withFake(fakeHub({ tree }), async (c) => {
      await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
    });
  });

  it("refuses files listed twice and a name that is both a file and a folder", async () => {
    const twice = (_p: string, res: ServerResponse) =>
      sendJson(res, [
        { type: "file", path: "model.safetensors", size: 1 },
        { type: "file", path: "model.safetensors", size: 2 },
      ]);
    await withFake(fakeHub({ tree: twice }), async (c) => {
      expect((await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE")).message).toContain("listed twice");
    });
    const clash = (_p: string, res: ServerResponse) =>
      sendJson(res, [
        { type: "file", path: "a", size: 1 },
        { type: "file", path: "a/model.safetensors", size: 2 },
      ]);
    await withFake(fakeHub({ tree: clash }), async (c) => {
      expect((await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE")).message).toContain(
        "both a file and a folder",
      );
    });
  });

  it("validates shas, sizes and digests", async () => {
    const badAnswers: Array<{ info?: unknown; tree?: unknown; expect: string }> = [
      { info: { sha: "main" }, expect: "sha: sha is not a 40-hex commit id" },
      { info: "<html>maintenance</html>", expect: "is not JSON" },
      { tree: [{ type: "file", path: "model.safetensors", size: -1 }], expect: "0.size" },
      { tree: [{ type: "file", path: "model.safetensors", size: 1.5 }], expect: "0.size" },
      {
        tree: [{ type: "file", path: "model.safetensors", size: 5, lfs: { oid: "nope", size: 5 } }],
        expect: "lfs.oid is not a sha256",
      },
      {
        tree: [{ type: "file", path: "model.safetensors", size: 5, lfs: { oid: LFS, size: 6 } }],
        expect: "LFS size 6",
      },
      { tree: { files: [] }, expect: "the file list" },
      { tree: [{ type: "symlink", path: "x" }], expect: "0.type" },
    ];
    for (const bad of badAnswers) {
      const tree =
        bad.tree === undefined ? undefined : (_p: string, res: ServerResponse) => sendJson(res, bad.tree);
      await withFake(fakeHub({ info: bad.info, tree }), async (c) => {
        const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
        expect(error.message).toContain(bad.expect);
      });
    }
  });

  it("refuses an answer for another commit than the sha asked for", async () => {
    await withFake(fakeHub(), async (c) => {
      const error = await failure(c.resolve(ref(REPO, "9".repeat(40))), "HUB_BAD_RESPONSE");
      expect(error.message).toContain(`asked for commit ${"9".repeat(40)}, got ${SHA}`);
    });
  });

  it("refuses a config.json that is not a JSON object, or too large", async () => {
    await withFake(fakeHub({ config: (res) => sendJson(res, [1, 2, 3]) }), async (c) => {
      const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
      expect(error.message).toContain("config.json of evil-org/model is not a JSON object");
    });
    const huge = (res: ServerResponse) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write('{"pad":"');
      res.end(`${"x".repeat(9 * 1024 * 1024)}"}`);
    };
    await withFake(fakeHub({ config: huge }), async (c) => {
      const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
      expect(error.message).toContain("larger than 8388608 bytes");
    });
  });

  it("never follows a pagination link to another host (the token would go with it)", async () => {
    const elsewhere = await startFake((_req, res) => sendJson(res, []));
    try {
      const tree = (_p: string, res: ServerResponse) =>
        sendJson(res, [{ type: "file", path: "config.json", size: 60 }], {
          Link: `<${elsewhere.url}/api/models/${REPO}/tree/${SHA}?cursor=1>; rel="next"`,
        });
      await withFake(
        fakeHub({ tree }),
        async (c) => {
          const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
          expect(error.message).toContain(`points to another host (${elsewhere.url})`);
        },
        { token: SIM_HUB_TOKEN },
      );
      expect(elsewhere.requests).toEqual([]);
    } finally {
      await elsewhere.stop();
    }
  });

  it("follows a redirect of a file to another host without the token", async () => {
    const cdn = await startFake((_req, res) => sendJson(res, CONFIG));
    try {
      const config = (res: ServerResponse) => {
        res.writeHead(302, { Location: `${cdn.url}/config.json` });
        res.end();
      };
      await withFake(
        fakeHub({ config }),
        async (c, fake) => {
          const info = await c.resolve(ref(REPO));
          expect(info.config).toEqual(CONFIG);
          expect(fake.requests.every((r) => r.authorization === `Bearer ${SIM_HUB_TOKEN}`)).toBe(true);
        },
        { token: SIM_HUB_TOKEN },
      );
      expect(cdn.requests).toEqual([{ path: "/config.json", authorization: undefined }]);
    } finally {
      await cdn.stop();
    }
  });

  it("stops a pagination loop", async () => {
    const tree = (path: string, res: ServerResponse) =>
      sendJson(res, [{ type: "file", path: "config.json", size: 60 }], {
        Link: `<${path}>; rel="next"`,
      });
    await withFake(fakeHub({ tree }), async (c, fake) => {
      const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
      expect(error.message).toContain("the pages never end");
      expect(fake.requests.filter((r) => r.path.includes("/tree/")).length).toBe(1);
    });
  });

  it("gives up on a Hub that never answers, each attempt limited by the timeout", async () => {
    const started = Date.now();
    await withFake(
      () => {
        // Never answers.
      },
      async (c, fake) => {
        const error = await failure(c.resolve(ref(REPO)), "HUB_UNAVAILABLE");
        expect(error.message).toContain("no answer within 0.15 s on 4 attempts");
        expect(fake.requests.length).toBe(4);
      },
      { timeoutMs: 150 },
    );
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("times out a body that stalls half way", async () => {
    const stall = (res: ServerResponse) => {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "1000" });
      res.write('{"architectures":');
    };
    await withFake(
      fakeHub({ config: stall }),
      async (c) => {
        const error = await failure(c.resolve(ref(REPO)), "HUB_UNAVAILABLE");
        expect(error.message).toContain("no answer within 0.2 s on 4 attempts to read config.json");
      },
      { timeoutMs: 200 },
    );
  });

  it("keeps the token out of errors and logs even when the Hub echoes it", async () => {
    const echo: Handler = (req, res) => {
      const auth = req.headers.authorization ?? "";
      res.writeHead(400, { "X-Error-Message": `bad request from ${auth}` });
      res.end(`bad request from ${auth}`);
    };
    const lines: string[] = [];
    const log = createLogger({ level: "trace", destination: { write: (l: string) => lines.push(l) } });
    await withFake(
      echo,
      async (c, fake) => {
        const error = await failure(c.resolve(ref(REPO)), "HUB_BAD_RESPONSE");
        expect(error.message).toContain("unexpected HTTP 400");
        expect(error.message).toContain("[redacted]");
        expect(errorText(error)).not.toContain(SIM_HUB_TOKEN);
        expect(fake.requests[0]?.authorization).toBe(`Bearer ${SIM_HUB_TOKEN}`);
      },
      { token: SIM_HUB_TOKEN, log },
    );
    expect(lines.join("")).toContain("bad request from Bearer [redacted]");
    expect(lines.join("")).not.toContain(SIM_HUB_TOKEN);
  });

  it("refuses an endpoint with credentials or a query in it", () => {
    for (const endpoint of ["ftp://hub", "https://user:pw@hub.example", "https://hub.example/?x=1", "nope"]) {
      expect(() => new HubClient({ endpoint })).toThrow(CodedError);
    }
  });
});
