import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  makeModel,
  SIM_HUB_TOKEN,
  type SimHub,
  type SimModel,
  startSimHub,
} from "../../testbench/hub/index.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";

const SHIMS = join(import.meta.dirname, "../../testbench/gpu-host/shims");
const HINT = "Hint: set HF_DEBUG=1 as environment variable for full traceback.";

let hub: SimHub;
let dir: { path: string; remove: () => Promise<void> };
let root: string;
let qwen: SimModel;
let llama: SimModel;
const children = new Set<ChildProcess>();

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function startShim(script: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [join(SHIMS, script), ...args], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: join(root, "home"),
      MODELSWAP_SANDBOX: root,
      HF_SIM_RETRY_DELAY_MS: "20",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<Run>((resolve) => {
    child.on("close", (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, done };
}

async function hf(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return await startShim("hf.mjs", args, env).done;
}

function listFiles(base: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else out.push(p.slice(base.length + 1));
    }
  };
  if (existsSync(base)) walk(base);
  return out.sort();
}

const incompleteFiles = (localDir: string) => listFiles(localDir).filter((f) => f.endsWith(".incomplete"));
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const gitOid = (data: Buffer) =>
  createHash("sha1").update(`blob ${data.length}\0`).update(data).digest("hex");

async function api(path: string, init: RequestInit = {}) {
  const res = await fetch(`${hub.url}${path}`, init);
  const text = init.method === "HEAD" ? "" : await res.text();
  return { res, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

beforeAll(async () => {
  hub = await startSimHub();
  dir = await tempDir("modelswap-hub-");
  root = dir.path;
  await mkdir(join(root, "state"), { recursive: true });
  await mkdir(join(root, "home"), { recursive: true });
  await writeFile(join(root, "state", "config.json"), JSON.stringify({ name: "sim", hubUrl: hub.url }));
  qwen = hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  llama = hub.addModel(makeModel("llama-bf16-small", { weightBytes: 512 * 1024 }));
});

afterEach(async () => {
  hub.setFault(null);
  hub.setThrottle(null);
  await writeFile(join(root, "state", "faults.json"), "{}");
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await hub.stop();
  await dir.remove();
});

describe("simulated Hub API", () => {
  it("answers model info in the Hub's shape, with per-file metadata when blobs=true", async () => {
    const plain = (await api(`/api/models/${qwen.id}`)).json();
    expect(plain).toMatchObject({
      id: qwen.id,
      modelId: qwen.id,
      sha: qwen.sha,
      private: false,
      gated: false,
    });
    expect(plain._id).toMatch(/^[0-9a-f]{24}$/);
    expect(plain.siblings).toContainEqual({ rfilename: "config.json" });
    expect(plain.cardData).toMatchObject({ license: "apache-2.0" });
    expect(plain.config).toMatchObject({
      architectures: ["Qwen3_5MoeForConditionalGeneration"],
      quantization_config: { quant_method: "modelopt" },
    });
    const safetensors = plain.safetensors as { parameters: Record<string, number>; total: number };
    expect(safetensors.total).toBe(Object.values(safetensors.parameters).reduce((a, b) => a + b, 0));
    expect(plain.usedStorage).toBe(qwen.totalBytes);

    const blobs = (await api(`/api/models/${qwen.id}/revision/main?blobs=true`)).json();
    const siblings = blobs.siblings as Array<Record<string, unknown>>;
    const shard = siblings.find((s) => s.rfilename === "model-00001-of-00003.safetensors");
    const shardBytes = hub.fileBytes(qwen.id, "model-00001-of-00003.safetensors");
    expect(shard).toMatchObject({
      size: shardBytes.length,
      lfs: {
        sha256: sha256(shardBytes),
        size: shardBytes.length,
        pointerSize: 125 + String(shardBytes.length).length,
      },
    });
    expect(shard?.blobId).toMatch(/^[0-9a-f]{40}$/);
    const config = siblings.find((s) => s.rfilename === "config.json");
    expect(config).toEqual({
      rfilename: "config.json",
      blobId: gitOid(hub.fileBytes(qwen.id, "config.json")),
      size: hub.fileBytes(qwen.id, "config.json").length,
    });

    const expanded = (await api(`/api/models/${qwen.id}?expand[]=safetensors&expand[]=gated`)).json();
    expect(Object.keys(expanded).sort()).toEqual(["_id", "gated", "id", "safetensors"]);
  });

  it("lists the tree recursively (files with lfs oids, folders) and per folder", async () => {
    const tree = (
      await api(`/api/models/${llama.id}/tree/main?recursive=true&expand=false`)
    ).json() as unknown as Array<Record<string, unknown>>;
    expect(tree).toContainEqual(expect.objectContaining({ type: "directory", path: "original", size: 0 }));
    const weights = tree.find((e) => e.path === "model.safetensors");
    const bytes = hub.fileBytes(llama.id, "model.safetensors");
    expect(weights).toMatchObject({
      type: "file",
      size: bytes.length,
      lfs: { oid: sha256(bytes), size: bytes.length },
    });
    expect(tree.some((e) => e.path === "original/params.json")).toBe(true);

    const top = (await api(`/api/models/${llama.id}/tree/main`)).json() as unknown as Array<
      Record<string, unknown>
    >;
    expect(top.some((e) => e.path === "original/params.json")).toBe(false);
    expect(top).toContainEqual(expect.objectContaining({ type: "directory", path: "original" }));
    const sub = (await api(`/api/models/${llama.id}/tree/main/original`)).json() as unknown as Array<
      Record<string, unknown>
    >;
    expect(sub.map((e) => e.path).sort()).toEqual([
      "original/consolidated.00.pth",
      "original/params.json",
      "original/tokenizer.model",
    ]);
  });

  it("serves files with the real headers, Range → 206 and out-of-range → 416", async () => {
    const path = "model-00002-of-00003.safetensors";
    const bytes = hub.fileBytes(qwen.id, path);
    const head = await api(`/${qwen.id}/resolve/main/${path}`, { method: "HEAD" });
    expect(head.res.status).toBe(200);
    expect(head.res.headers.get("etag")).toBe(`"${sha256(bytes)}"`);
    expect(head.res.headers.get("x-linked-etag")).toBe(`"${sha256(bytes)}"`);
    expect(head.res.headers.get("x-linked-size")).toBe(String(bytes.length));
    expect(head.res.headers.get("x-repo-commit")).toBe(qwen.sha);
    expect(head.res.headers.get("content-length")).toBe(String(bytes.length));
    expect(head.res.headers.get("accept-ranges")).toBe("bytes");

    const part = await fetch(`${hub.url}/${qwen.id}/resolve/${qwen.sha}/${path}`, {
      headers: { Range: "bytes=1000-1999" },
    });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 1000-1999/${bytes.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(1000, 2000))).toBe(true);

    const tail = await fetch(`${hub.url}/${qwen.id}/resolve/main/${path}`, {
      headers: { Range: "bytes=-10" },
    });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(bytes.length - 10))).toBe(true);

    const beyond = await fetch(`${hub.url}/${qwen.id}/resolve/main/${path}`, {
      headers: { Range: `bytes=${bytes.length}-` },
    });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get("content-range")).toBe(`bytes */${bytes.length}`);

    const config = await api(`/${qwen.id}/resolve/main/config.json`, { method: "HEAD" });
    expect(config.res.headers.get("etag")).toBe(`"${gitOid(hub.fileBytes(qwen.id, "config.json"))}"`);
    expect(config.res.headers.get("x-linked-etag")).toBeNull();
  });

  it("answers errors with the Hub's codes: missing repo, revision, file, bad token, gated, private", async () => {
    const anon = await api("/api/models/nope/nope");
    expect(anon.res.status).toBe(401);
    expect(anon.res.headers.get("x-error-code")).toBe("RepoNotFound");
    expect(anon.json()).toEqual({ error: "Repository not found" });
    const authed = await api("/api/models/nope/nope", {
      headers: { Authorization: `Bearer ${SIM_HUB_TOKEN}` },
    });
    expect(authed.res.status).toBe(404);
    expect(authed.res.headers.get("x-error-code")).toBe("RepoNotFound");

    const rev = await api(`/api/models/${qwen.id}/revision/nope`);
    expect(rev.res.status).toBe(404);
    expect(rev.res.headers.get("x-error-code")).toBe("RevisionNotFound");
    expect(rev.json()).toEqual({ error: "Invalid rev id: nope" });

    const missing = await api(`/${qwen.id}/resolve/main/nope.bin`);
    expect(missing.res.status).toBe(404);
    expect(missing.res.headers.get("x-error-code")).toBe("EntryNotFound");
    expect(missing.res.headers.get("x-repo-commit")).toBe(qwen.sha);

    const badToken = await api(`/api/models/${qwen.id}`, { headers: { Authorization: "Bearer hf_wrong" } });
    expect(badToken.res.status).toBe(401);
    expect(badToken.res.headers.get("x-error-message")).toBe("Invalid credentials in Authorization header");

    // Gated: metadata public, files need a token (401 without, 403 when not approved).
    expect((await api(`/api/models/${llama.id}`)).json().gated).toBe("manual");
    const gated = await api(`/${llama.id}/resolve/main/config.json`);
    expect(gated.res.status).toBe(401);
    expect(gated.res.headers.get("x-error-code")).toBe("GatedRepo");
    expect(gated.text).toContain(`Access to model ${llama.id} is restricted`);
    const granted = await api(`/${llama.id}/resolve/main/config.json`, {
      headers: { Authorization: `Bearer ${SIM_HUB_TOKEN}` },
    });
    expect(granted.res.status).toBe(200);
    const strict = hub.addModel({
      ...makeModel("tiny", { id: "sim-org/strict" }),
      gated: "auto",
      approvedTokens: [],
    });
    const denied = await api(`/${strict.id}/resolve/main/config.json`, {
      headers: { Authorization: `Bearer ${SIM_HUB_TOKEN}` },
    });
    expect(denied.res.status).toBe(403);
    expect(denied.res.headers.get("x-error-code")).toBe("GatedRepo");

    const secret = hub.addModel(makeModel("tiny", { id: "sim-org/secret", private: true }));
    expect((await api(`/api/models/${secret.id}`)).res.status).toBe(401);
    const own = await api(`/api/models/${secret.id}`, {
      headers: { Authorization: `Bearer ${SIM_HUB_TOKEN}` },
    });
    expect(own.res.status).toBe(200);
  });

  it("builds realistic presets, including the real claimed sizes for plan tests", async () => {
    const claimed = makeModel("qwen3.5-moe-nvfp4", { sizes: "claimed" });
    const shards = claimed.files.filter((f) => f.path.endsWith(".safetensors"));
    expect(shards).toHaveLength(19);
    expect(shards[0]?.path).toBe("model-00001-of-00019.safetensors");
    const weightBytes = shards.reduce((sum, f) => sum + f.size, 0);
    expect(weightBytes / 1e9).toBeCloseTo(223, 0);
    const quant = JSON.parse(String(claimed.files.find((f) => f.path === "hf_quant_config.json")?.content));
    expect(quant).toMatchObject({ producer: { name: "modelopt" }, quantization: { quant_algo: "NVFP4" } });

    const kimi = hub.addModel(makeModel("kimi-k2-int4", { sizes: "claimed" }));
    const kimiShards = kimi.files.filter((f) => f.path.endsWith(".safetensors"));
    expect(kimiShards).toHaveLength(62);
    expect(kimiShards[61]?.path).toBe("model-00062-of-000062.safetensors");
    const config = JSON.parse(String(kimi.files.find((f) => f.path === "config.json")?.content));
    expect(config).toMatchObject({
      architectures: ["DeepseekV3ForCausalLM"],
      num_attention_heads: 64,
      n_routed_experts: 384,
      num_experts_per_tok: 8,
      quantization_config: { quant_method: "compressed-tensors", format: "pack-quantized" },
    });
    // Claimed sizes cost nothing until downloaded: the tree is listed at once.
    const started = Date.now();
    const tree = (await api(`/api/models/${kimi.id}/tree/main?recursive=true`)).json() as unknown as Array<{
      path: string;
      size: number;
    }>;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(tree.reduce((sum, e) => sum + e.size, 0)).toBe(kimi.totalBytes);
    const index = JSON.parse(
      String(kimi.files.find((f) => f.path === "model.safetensors.index.json")?.content),
    );
    expect(Object.values(index.weight_map)).toContain("model-00062-of-000062.safetensors");
  });
});

describe("simulated hf CLI", () => {
  it("prints the real texts for version, help and the removed huggingface-cli", async () => {
    expect((await hf(["version"])).stdout).toBe("1.33.0\n");
    const help = await hf(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: hf \[OPTIONS\] \[COMMAND\] \[ARGS\]\.\.\./);
    const dlHelp = await hf(["download", "--help"]);
    expect(dlHelp.stdout).toContain("--max-workers INTEGER");
    const old = await startShim("huggingface-cli.mjs", ["download", qwen.id]).done;
    expect(old.code).toBe(1);
    expect(old.stderr).toContain(
      "Warning: `huggingface-cli` is deprecated and no longer works. Use `hf` instead.",
    );
    const usage = await hf(["download"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("Error: Missing argument 'REPO_ID'.");
    const calls = readFileSync(join(root, "state", "calls.jsonl"), "utf8");
    expect(calls).toContain('"cmd":"hf","argv":["version"]');
  });

  it("downloads a model like the real client: requests, layout, sizes, sha256; a re-run fetches nothing", async () => {
    const localDir = join(root, "models", "qwen");
    hub.clearRequests();
    const run = await hf(["download", qwen.id, "--local-dir", localDir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`✓ Downloaded\n  path: ${localDir}\n`);
    expect(run.stderr).toMatch(/Fetching 13 files: 100%\|██████████\| 13\/13 \[/);

    const reqs = hub.requests();
    expect(`${reqs[0]?.method} ${reqs[0]?.path}`).toBe(`GET /api/models/${qwen.id}/revision/main`);
    expect(`${reqs[1]?.method} ${reqs[1]?.path}?${reqs[1]?.query}`).toBe(
      `GET /api/models/${qwen.id}/tree/${qwen.sha}?recursive=true&expand=false`,
    );
    const heads = reqs.filter((r) => r.method === "HEAD");
    const gets = reqs.filter((r) => r.kind === "resolve" && r.method === "GET");
    expect(heads).toHaveLength(13);
    expect(gets).toHaveLength(13);
    for (const get of gets) {
      const headIndex = reqs.findIndex((r) => r.method === "HEAD" && r.file === get.file);
      expect(headIndex).toBeLessThan(reqs.indexOf(get));
      expect(get.path).toContain(`/resolve/${qwen.sha}/`);
    }

    for (const file of qwen.files) {
      const local = readFileSync(join(localDir, file.path));
      expect(local.length).toBe(file.size);
      const d = hub.fileDigests(qwen.id, file.path);
      if (file.lfs) expect(sha256(local)).toBe(d.sha256);
      else expect(gitOid(local)).toBe(d.gitOid);
      const metadata = readFileSync(
        join(localDir, ".cache/huggingface/download", `${file.path}.metadata`),
        "utf8",
      );
      const [commit, etag] = metadata.split("\n");
      expect(commit).toBe(qwen.sha);
      expect(etag).toBe(file.lfs ? d.sha256 : d.gitOid);
    }
    expect(incompleteFiles(localDir)).toEqual([]);

    const served = hub.bytesServed(qwen.id);
    expect(served).toBe(qwen.totalBytes);
    hub.clearRequests();
    const again = await hf(["download", qwen.id, "--local-dir", localDir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`✓ Downloaded\n  path: ${localDir}\n`);
    expect(hub.requests().map((r) => r.path)).toEqual([`/api/models/${qwen.id}/revision/main`]);
    const pinned = await hf(["download", qwen.id, "--revision", qwen.sha ?? "", "--local-dir", localDir]);
    expect(pinned.code).toBe(0);
    expect(hub.requests()).toHaveLength(1);
    expect(hub.bytesServed(qwen.id)).toBe(0);

    const dry = await hf(["download", qwen.id, "--local-dir", join(root, "models", "dry"), "--dry-run"]);
    expect(dry.stdout).toMatch(
      /^\[dry-run\] Will download 13 files \(out of 13\) totalling 6\.\dM\.\nFILE +SIZE/,
    );
    expect(dry.stdout).toMatch(/\nmodel-00001-of-00003\.safetensors 2\.4M *\n/);
  });

  it("gated repos need a token; missing repos and revisions fail with the real messages", async () => {
    const localDir = join(root, "models", "llama");
    const denied = await hf(["download", llama.id, "--local-dir", localDir]);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain(`Error: Access denied. This repository requires approval.\n${HINT}\n`);
    const ok = await hf(["download", llama.id, "--local-dir", localDir], { HF_TOKEN: SIM_HUB_TOKEN });
    expect(ok.code).toBe(0);
    expect(readFileSync(join(localDir, "original", "params.json"), "utf8")).toContain('"n_layers": 16');

    const missing = await hf(["download", "nope/nope", "--local-dir", join(root, "models", "nope")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      "Error: Model 'nope/nope' not found.\nIf the repo is private, make sure you are authenticated and your token has the required permissions.\nIf the repo does not exist, create it with: hf repos create nope/nope\n" +
        HINT,
    );
    const rev = await hf([
      "download",
      qwen.id,
      "--revision",
      "v9",
      "--local-dir",
      join(root, "models", "nope"),
    ]);
    expect(rev.code).toBe(1);
    expect(rev.stderr).toContain(`Error: Revision not found in model '${qwen.id}'.\n${HINT}`);
    const badToken = await hf([
      "download",
      qwen.id,
      "--token",
      "hf_wrong",
      "--local-dir",
      join(root, "models", "bad"),
    ]);
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toContain("Invalid credentials in Authorization header");
  });

  it("a killed hf leaves its *.incomplete files; a new process starts those files again from byte 0", async () => {
    const model = hub.addModel(
      makeModel("tiny", { id: "sim-org/killable", shards: 3, weightBytes: 3 * 1024 * 1024 }),
    );
    const localDir = join(root, "models", "killable");
    hub.clearRequests();
    hub.setThrottle(1_500_000);
    const first = startShim("hf.mjs", ["download", model.id, "--local-dir", localDir]);
    await until(
      () => {
        // a shard that completes between the listing and the stat is renamed away: it is not partial
        const partial = incompleteFiles(localDir).flatMap((f) => {
          const stat = statSync(join(localDir, f), { throwIfNoEntry: false });
          return stat === undefined ? [] : [stat.size];
        });
        return partial.length >= 2 && partial.every((size) => size > 100_000);
      },
      { what: "partial shards on disk", timeoutMs: 10_000, intervalMs: 20 },
    );
    first.child.kill("SIGTERM");
    const killed = await first.done;
    expect(killed.signal).toBe("SIGTERM");

    const orphans = incompleteFiles(localDir);
    expect(orphans.length).toBeGreaterThanOrEqual(2);
    for (const orphan of orphans) {
      expect(orphan).toMatch(
        /^\.cache\/huggingface\/download\/[A-Za-z0-9_-]{27}=\.[0-9a-f]{64}\.[0-9a-f]{8}\.incomplete$/,
      );
    }
    const shards = model.files.filter((f) => f.path.endsWith(".safetensors"));
    const partialBefore = new Map(shards.map((f) => [f.path, hub.bytesServed(model.id, f.path)]));
    const unfinished = shards.filter((f) => !existsSync(join(localDir, f.path)));
    expect(unfinished.length).toBeGreaterThanOrEqual(2);

    hub.setThrottle(null);
    hub.clearRequests();
    const second = await hf(["download", model.id, "--local-dir", localDir]);
    expect(second.code).toBe(0);
    for (const shard of unfinished) {
      // Served again in full, from byte 0 (no Range): the partial bytes of the killed run are lost.
      expect(hub.bytesServed(model.id, shard.path)).toBe(shard.size);
      expect((partialBefore.get(shard.path) ?? 0) > 0).toBe(true);
      expect(sha256(readFileSync(join(localDir, shard.path)))).toBe(
        hub.fileDigests(model.id, shard.path).sha256,
      );
    }
    expect(hub.requests().every((r) => r.range === undefined)).toBe(true);
    // The orphans of the killed process stay behind (the real client never cleans them up).
    expect(incompleteFiles(localDir)).toEqual(orphans);
  });

  it("host fault crashAfterBytes: hf dies by SIGKILL mid-download, partial file left", async () => {
    const model = hub.addModel(makeModel("tiny", { id: "sim-org/crashy", weightBytes: 2 * 1024 * 1024 }));
    const localDir = join(root, "models", "crashy");
    await writeFile(join(root, "state", "faults.json"), JSON.stringify({ hf: { crashAfterBytes: 600_000 } }));
    const run = await hf(["download", model.id, "--local-dir", localDir]);
    expect(run.signal).toBe("SIGKILL");
    const partial = incompleteFiles(localDir).filter((f) => statSync(join(localDir, f)).size > 0);
    expect(partial.length).toBeGreaterThanOrEqual(1);
    expect(existsSync(join(localDir, "model.safetensors"))).toBe(false);
  });

  it("a connection cut mid-body is resumed with Range inside the same process", async () => {
    const model = hub.addModel(makeModel("tiny", { id: "sim-org/flaky", weightBytes: 1024 * 1024 }));
    const localDir = join(root, "models", "flaky");
    hub.clearRequests();
    hub.setFault({ kind: "drop-after-bytes", bytes: 300_000, times: 1 });
    const run = await hf(["download", model.id, "model.safetensors", "--local-dir", localDir]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain("Trying to resume download...");
    const gets = hub.requests().filter((r) => r.method === "GET" && r.file === "model.safetensors");
    expect(gets.map((r) => [r.status, r.range, r.aborted])).toEqual([
      [200, undefined, true],
      [206, "bytes=300000-", false],
    ]);
    const local = readFileSync(join(localDir, "model.safetensors"));
    expect(sha256(local)).toBe(hub.fileDigests(model.id, "model.safetensors").sha256);
  });

  it("a connection that keeps dropping makes hf fail (exit 1) and remove its temp file", async () => {
    const model = hub.addModel(makeModel("tiny", { id: "sim-org/dead", weightBytes: 256 * 1024 }));
    const localDir = join(root, "models", "dead");
    hub.setFault({ kind: "drop-after-bytes", bytes: 0 });
    const run = await hf(["download", model.id, "--include", "*.safetensors", "--local-dir", localDir]);
    expect(run.code).toBe(1);
    expect(run.stderr.match(/Trying to resume download\.\.\./g)).toHaveLength(5);
    expect(run.stderr).toContain("Max retries exceeded.");
    expect(run.stderr).toMatch(
      /\nhttpx\.RemoteProtocolError: peer closed connection without sending complete message body \(received 0 bytes, expected 262144\)\n$/,
    );
    expect(incompleteFiles(localDir)).toEqual([]);
    expect(existsSync(join(localDir, "model.safetensors"))).toBe(false);
  });

  it("follows the tree listing's Link pages and honours HF_ENDPOINT", async () => {
    const paged = await startSimHub({ treePageSize: 4 });
    try {
      const model = paged.addModel(makeModel("tiny"));
      const localDir = join(root, "models", "paged");
      const run = await hf(["download", model.id, "--local-dir", localDir], { HF_ENDPOINT: paged.url });
      expect(run.code).toBe(0);
      const trees = paged.requests().filter((r) => r.path.includes("/tree/"));
      expect(trees.map((r) => r.query)).toEqual([
        "recursive=true&expand=false",
        "recursive=true&expand=false&cursor=4&limit=4",
      ]);
      for (const file of model.files) expect(statSync(join(localDir, file.path)).size).toBe(file.size);
    } finally {
      await paged.stop();
    }
  });

  it("a Hub error on the first API call is reported as the real client does", async () => {
    hub.setFault({ kind: "status", status: 500, times: 1, on: "api" });
    const run = await hf(["download", qwen.id, "--local-dir", join(root, "models", "down")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /Error: Local entry not found\. Server error '500 Internal Server Error' for url 'http:\/\/127\.0\.0\.1:\d+\/api\/models\/nvidia\/Qwen3\.5-397B-A17B-NVFP4\/revision\/main' \(Request ID: Root=1-[0-9a-f]+-[0-9a-f]+\)\n/,
    );
    expect(run.stderr).toContain(HINT);
  });
});
