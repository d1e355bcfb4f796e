import { mkdir, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fenceDir, fencedExec } from "../../src/host/fence.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { SshTransport } from "../../src/host/ssh-transport.ts";
import type { HostTransport } from "../../src/host/transport.ts";
import { createLogger } from "../../src/log.ts";
import { deleteDirsCommand, parseDeleteOutcomes } from "../../src/retention/delete-commands.ts";
import { type BenchSshd, startSshd } from "../../testbench/sshd.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * The deleting command of disk retention (src/retention/delete-commands.ts), run under the fence over a
 * real sshd and the local transport: it deletes a model directory only when the host, in the same
 * command, finds it is what was read — not a symlink, not reached through one, inside the models
 * directory, named by no unit file — and keeps everything else, saying why. A path with `..`, or outside
 * the models directory, never reaches the host's shell at all.
 */
const log = createLogger({ level: "silent" });
let dir: { path: string; remove: () => Promise<void> };
let sshd: BenchSshd;
const transports: HostTransport[] = [];
let number = 0;

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  dir = await tempDir();
  sshd = await startSshd(join(dir.path, "sshd"));
  const login = await sshd.authorize({ PATH: "/usr/local/bin:/usr/bin:/bin" });
  transports.push(
    new SshTransport({
      hostName: "ssh-host",
      ssh: {
        address: "127.0.0.1",
        port: sshd.port,
        user: process.env.USER ?? "root",
        privateKeyPath: login.privateKeyPath,
        hostKeySha256: sshd.hostKeySha256(),
        connectTimeoutSeconds: 5,
        keepaliveSeconds: 5,
        maxSessions: 4,
      },
      commandTimeoutMs: 10_000,
      log,
    }),
    new LocalTransport({ hostName: "local-host", commandTimeoutMs: 10_000 }),
  );
});

afterAll(async () => {
  for (const t of transports) await t.close();
  await sshd?.stop();
  await dir?.remove();
});

describe.each([0, 1])("disk retention's deletes (transport %i)", (index) => {
  it("deletes only what is still what was read, inside the models directory, named by no unit", async () => {
    const transport = transports[index]!;
    const root = join(dir.path, `host-${index}`);
    const models = join(root, "models");
    const units = join(root, "units");
    const outside = join(root, "outside");
    await mkdir(join(models, ".modelswap"), { recursive: true });
    await mkdir(units, { recursive: true });
    await mkdir(join(outside, "org--victim--0123456789ab"), { recursive: true });
    await writeFile(join(outside, "org--victim--0123456789ab", "w.bin"), "precious");
    const plain = join(models, "org--old--000000000001");
    const named = join(models, "org--named--000000000002");
    for (const d of [plain, named]) {
      await mkdir(d);
      await writeFile(join(d, "model.safetensors"), "x".repeat(1000));
    }
    await writeFile(join(units, "other.service"), `[Service]\nExecStart=/usr/bin/true ${named}\n`);
    // a symlink in the models directory to a directory outside it, and a subdirectory reached through one
    const link = join(models, "org--link--000000000003");
    await symlink(join(outside, "org--victim--0123456789ab"), link);
    await symlink(outside, join(models, "via"));
    const through = join(models, "via", "org--victim--0123456789ab");
    const escaping = `${models}/../outside/org--victim--0123456789ab`;
    // reached through a symlink that stays inside: the directory is another one than the path says
    await mkdir(join(models, ".modelswap", "org--hidden--000000000004"));
    await symlink(join(models, ".modelswap"), join(models, "inner"));
    const moved = join(models, "inner", "org--hidden--000000000004");

    const result = await fencedExec(
      transport,
      { dir: fenceDir(models), token: { number: ++number, catchUp: async () => false } },
      deleteDirsCommand(models, units, [
        plain,
        named,
        link,
        through,
        moved,
        escaping,
        "/etc",
        `${models}/gone--x--000000000009`,
      ]),
      { timeoutMs: 10_000 },
    );
    expect(result.code).toBe(0);
    const outcomes = parseDeleteOutcomes(result.stdout);
    expect(outcomes).toEqual([
      { path: plain, result: "deleted" },
      { path: named, result: "kept", why: "a unit file names it now" },
      { path: link, result: "kept", why: "it is a symlink now" },
      { path: through, result: "kept", why: "it resolves outside the root" },
      { path: moved, result: "kept", why: "it no longer resolves to itself (a symlink on its way)" },
      { path: `${models}/gone--x--000000000009`, result: "gone" },
    ]);
    // `..` and a path outside the models directory never reached the host's shell
    expect(result.stdout).not.toContain("outside/org--victim");
    expect(await exists(plain)).toBe(false);
    expect(await exists(named)).toBe(true);
    expect(await exists(join(outside, "org--victim--0123456789ab", "w.bin"))).toBe(true);
    expect(await exists(link)).toBe(true);
    expect(await exists(join(models, ".modelswap", "org--hidden--000000000004"))).toBe(true);
  });
});
