import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { access, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import ssh2 from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verificationFiles } from "../../jobs/swap/stages/download-task.ts";
import {
  addServingLine,
  copyScript,
  PEER_KEY_VARIABLE,
  removeServingLine,
} from "../../jobs/swap/stages/peer-copy-task.ts";
import { detachedStatus, startDetached } from "../../src/host/detached-task.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { copyMarker, keyText, type PeerSource, servingLine } from "../../src/host/peer-copy.ts";
import { sh } from "../../src/host/shell-quote.ts";
import { SshTransport } from "../../src/host/ssh-transport.ts";
import type { ModelSummary } from "../../src/hub/types.ts";
import { createLogger } from "../../src/log.ts";
import { type BenchSshd, startSshd } from "../../testbench/sshd.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * A rollout's peer copy on real parts (src/host/peer-copy.ts): OpenSSH's sshd reading the line the
 * serving host adds, Debian's rsync and rrsync, ssh as the copying host runs it. The copy brings exactly
 * the listed files and checks them; it trusts only the key the bot pinned; the rollout's key reads the
 * model's directory and nothing else, from the rollout's hosts only, until its line expires or is removed.
 */
const run = promisify(execFile);
const log = createLogger({ level: "silent" });
const ROLLOUT = "ro-mxdq16y0-0b89cc";
let dir: { path: string; remove: () => Promise<void> };
let sshd: BenchSshd;
let serving: SshTransport;
const local = new LocalTransport({ hostName: "gpu-2", commandTimeoutMs: 20_000 });
let key: { public: string; private: string };
let source: PeerSource;
let info: Pick<ModelSummary, "repo" | "sha" | "files">;
let modelDir: string;

beforeAll(async () => {
  dir = await tempDir();
  sshd = await startSshd(join(dir.path, "sshd"));
  const login = await sshd.authorize({ PATH: "/usr/local/bin:/usr/bin:/bin" });
  serving = new SshTransport({
    hostName: "gpu-1",
    ssh: {
      address: "127.0.0.1",
      port: sshd.port,
      user: login.user,
      privateKeyPath: login.privateKeyPath,
      hostKeySha256: sshd.hostKeySha256(),
      connectTimeoutSeconds: 5,
      keepaliveSeconds: 5,
      maxSessions: 4,
    },
    commandTimeoutMs: 20_000,
    log,
  });
  await serving.exec(sh`true`); // the handshake, which pins the host's key
  const made = ssh2.utils.generateKeyPairSync("ed25519");
  key = { public: made.public.split(" ").slice(0, 2).join(" "), private: made.private };
  // the serving host's files, and one beside them the key must never read
  modelDir = join(dir.path, "gpu-1", "models", "org--model--0123456789ab");
  await mkdir(join(modelDir, "sub"), { recursive: true });
  const files = [
    { path: "model-00001-of-00002.safetensors", content: randomBytes(300_000) },
    { path: "sub/model-00002-of-00002.safetensors", content: randomBytes(200_000) },
    { path: "config.json", content: Buffer.from('{"model_type":"llama"}\n') },
  ];
  for (const f of files) await writeFile(join(modelDir, f.path), f.content);
  await writeFile(join(dir.path, "gpu-1", "models", "secret.txt"), "not for peers\n");
  const { createHash } = await import("node:crypto");
  info = {
    repo: "org/model",
    sha: "0123456789abcdef0123456789abcdef01234567",
    files: files.map((f) => ({
      path: f.path,
      size: f.content.length,
      ...(f.path.endsWith(".safetensors")
        ? { sha256: createHash("sha256").update(f.content).digest("hex") }
        : {}),
    })),
  };
  const raw = serving.hostKey();
  if (raw === undefined) throw new Error("the transport saw no host key");
  source = {
    host: "gpu-1",
    address: "127.0.0.1",
    port: sshd.port,
    user: login.user,
    modelDir,
    hostKey: keyText(raw),
  };
});
afterAll(async () => {
  await serving?.close();
  await sshd?.stop();
  await dir?.remove();
});

/** gpu-1 lets the rollout's key in, with these addresses and this expiry. */
async function serve(options: { from?: string[]; expires?: Date } = {}): Promise<void> {
  const line = servingLine({
    publicKey: key.public,
    modelDir,
    from: options.from ?? ["127.0.0.1"],
    expires: options.expires ?? new Date(Date.now() + 3_600_000),
    rolloutId: ROLLOUT,
    host: "gpu-1",
  });
  const result = await serving.exec(addServingLine(line, copyMarker(ROLLOUT, "gpu-1")));
  expect(result.code, result.stderr).toBe(0);
}

/** gpu-2 copies from `from` into a directory of its own: the task's end, and what it holds. */
async function copy(name: string, from: PeerSource = source) {
  const task = join(dir.path, "gpu-2", "tasks", name);
  const target = join(dir.path, "gpu-2", "models", name);
  await mkdir(task, { recursive: true });
  const lists = verificationFiles(info as ModelSummary);
  await writeFile(join(task, "sizes"), lists.sizes);
  await writeFile(join(task, "sha256sums"), lists.sums);
  await startDetached(local, task, copyScript(info, target, task, from), {
    [PEER_KEY_VARIABLE]: key.private,
  });
  await until(async () => (await detachedStatus(local, task)).state === "exited" || undefined, {
    what: `the copy ${name} to end`,
    timeoutMs: 30_000,
  });
  const status = await detachedStatus(local, task);
  const log = await readFile(join(task, "log"), "utf8");
  const keyLeft = await access(join(task, "peer_key")).then(
    () => true,
    () => false,
  );
  return { status, log, target, keyLeft };
}

/** The rollout's key asks gpu-1's sshd for something itself: what sshd and rrsync answer. */
async function asKey(...args: string[]): Promise<{ code: number; out: string }> {
  const keyFile = join(dir.path, "raw-key");
  await writeFile(keyFile, key.private, { mode: 0o600 });
  const ssh = `ssh -F /dev/null -i ${keyFile} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p ${sshd.port}`;
  return await run(
    args[0]!,
    args.slice(1).map((a) => a.replace("SSH", ssh)),
    { timeout: 20_000 },
  )
    .then((r) => ({ code: 0, out: r.stdout + r.stderr }))
    .catch((e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof e.code === "number" ? e.code : 1,
      out: `${e.stdout ?? ""}${e.stderr ?? ""}`,
    }));
}

describe("a peer copy, over a real sshd with rsync and rrsync", () => {
  it("brings exactly the listed files, checks their sizes and sha256, and leaves no key behind", async () => {
    await serve();
    const { status, log, target, keyLeft } = await copy("whole");
    expect(status.exitCode, log).toBe(0);
    expect(log).toContain(`modelswap: copying 3 files of org/model@${info.sha} from gpu-1`);
    expect(log).toContain("modelswap: verified 3 files");
    for (const f of info.files)
      expect(await readFile(join(target, f.path))).toEqual(await readFile(join(modelDir, f.path)));
    expect((await readdir(target)).sort()).toEqual([
      "config.json",
      "model-00001-of-00002.safetensors",
      "sub",
    ]);
    expect(keyLeft).toBe(false);
  });

  it("trusts only the key the bot pinned: a host presenting another is refused, nothing copied", async () => {
    await serve();
    const other = ssh2.utils.generateKeyPairSync("ed25519").public.split(" ").slice(0, 2).join(" ");
    const { status, log, target, keyLeft } = await copy("wrong-pin", { ...source, hostKey: other });
    expect(status.exitCode).not.toBe(0);
    expect(log).toMatch(/Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/);
    expect(await readdir(target).catch(() => [])).toEqual([]);
    expect(keyLeft).toBe(false);
  });

  it("fails its check on a file that differs from the Hub's sha256, and removes it", async () => {
    await serve();
    const wrong = {
      ...info,
      files: info.files.map((f, i) => (i === 0 ? { ...f, sha256: "0".repeat(64) } : f)),
    };
    const saved = info;
    info = wrong;
    try {
      const { status, log, target } = await copy("corrupt");
      expect(status.exitCode).toBe(4);
      expect(log).toContain("model-00001-of-00002.safetensors failed its sha256 check: removed");
      await expect(access(join(target, "model-00001-of-00002.safetensors"))).rejects.toThrow();
    } finally {
      info = saved;
    }
  });

  it("lets the rollout's key read the model's directory only: no file beside it, no write, no shell", async () => {
    await serve();
    const out = join(dir.path, "escape");
    await mkdir(out, { recursive: true });
    const outside = await asKey("rsync", "-e", "SSH", `root@127.0.0.1:../secret.txt`, out);
    expect(outside.code).not.toBe(0);
    expect(outside.out).toContain("rrsync error: do not use .. in arg");
    await expect(access(join(out, "secret.txt"))).rejects.toThrow();
    const write = await asKey("rsync", "-e", "SSH", join(dir.path, "raw-key"), "root@127.0.0.1:");
    expect(write.code).not.toBe(0);
    expect(write.out).toMatch(/read-only|not allowed/i);
    const shell = await asKey("sh", "-c", `SSH root@127.0.0.1 cat /etc/hostname`);
    expect(shell.code).not.toBe(0);
    expect(shell.out).toContain("rrsync error: SSH_ORIGINAL_COMMAND does not run rsync");
  });

  it("admits the rollout's hosts only, until its line expires or is removed", async () => {
    await serve({ from: ["10.9.9.9"] });
    expect((await copy("not-from-here")).status.exitCode).not.toBe(0);
    await serve({ expires: new Date(Date.now() - 120_000) });
    expect((await copy("expired")).status.exitCode).not.toBe(0);
    await serve();
    expect((await copy("again")).status.exitCode).toBe(0);
    const removed = await serving.exec(removeServingLine(copyMarker(ROLLOUT, "gpu-1")));
    expect(removed.code).toBe(0);
    const after = await copy("removed");
    expect(after.status.exitCode).not.toBe(0);
    expect(after.log).toMatch(/Permission denied/);
    const file = await readFile(join(sshd.home, ".ssh", "authorized_keys"), "utf8");
    expect(file).not.toContain(copyMarker(ROLLOUT, "gpu-1"));
  });
});
