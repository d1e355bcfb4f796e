import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LiveConfig } from "../../src/config/live-config.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { HostRegistry } from "../../src/host/host-registry.ts";
import { ConfigReloader } from "../../src/reload/config-reloader.ts";
import type { ConfigNote } from "../../src/store/config-notes.ts";
import { captureLog } from "../support/log-capture.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * One process's reload (src/reload/config-reloader.ts) on a real file: what it does with the same bytes
 * read twice, with a note from another process, and with another process's file that differs from its own.
 */
const file = (approvers: string) => `
slack: { channel: C0SWAPS01 }
requesters: { users: [U0ALICE01] }
approvers: { users: [${approvers}] }
hosts:
  - { name: box, local: true, modelsDir: /srv/models, venv: /opt/sglang/.venv, currentUnit: sglang-box.service }
`;
const sha = (text: string) => createHash("sha256").update(text).digest("hex");

interface Line {
  code?: string;
  level: number;
  msg: string;
}

let dir: { path: string; remove: () => Promise<void> };
let path: string;
let reloader: ConfigReloader;
let live: LiveConfig;
let lines: () => Line[];
const notes: ConfigNote[] = [];
const codes = () => lines().flatMap((l) => (l.code === undefined ? [] : [l.code]));

beforeEach(async () => {
  dir = await tempDir();
  path = join(dir.path, "modelswap.yaml");
  await writeFile(path, file("U0BOB0001"));
  live = new LiveConfig(
    await loadConfig({ SLACK_BOT_TOKEN: "xoxb-1-abc", SLACK_SIGNING_SECRET: "0123456789abcdef0123" }, path),
  );
  const captured = captureLog<Line>();
  lines = captured.lines;
  notes.length = 0;
  reloader = new ConfigReloader({
    live,
    readFor: { hostKeys: false },
    process: "bot@test:1",
    hosts: new HostRegistry(live.current().file.hosts, captured.log),
    holderOf: async () => undefined,
    notes: { publish: async (note) => void notes.push(note) },
    log: captured.log,
  });
  await reloader.reload({ kind: "start" });
});
afterEach(() => dir.remove());

describe("ConfigReloader", () => {
  it("at start says nothing, and tells the others which file it runs", async () => {
    expect(codes()).toEqual([]);
    expect(notes).toEqual([{ sha256: sha(file("U0BOB0001")), process: "bot@test:1" }]);
  });

  it("a watch event with the same bytes does nothing; SIGHUP always reads and says what it found", async () => {
    expect(await reloader.reload({ kind: "file" })).toEqual({ kind: "unchanged" });
    expect(codes()).toEqual([]);
    expect((await reloader.reload({ kind: "signal" })).kind).toBe("applied");
    expect(codes()).toEqual(["CONFIG_UNCHANGED"]);
  });

  it("a bad file is refused once: more events with its bytes say nothing more; fixed, it applies", async () => {
    await writeFile(path, file("bob"));
    expect((await reloader.reload({ kind: "file" })).kind).toBe("refused");
    expect(await reloader.reload({ kind: "file" })).toEqual({ kind: "unchanged" });
    expect(codes()).toEqual(["CONFIG_INVALID"]);
    expect(live.current().file.approvers.users).toEqual(["U0BOB0001"]);
    await writeFile(path, file("U0BOB0001, U0ERIN001"));
    expect((await reloader.reload({ kind: "file" })).kind).toBe("applied");
    expect(live.current().file.approvers.users).toEqual(["U0BOB0001", "U0ERIN001"]);
  });

  it("a note of a file it has not read makes it read its own; one of the file it runs, not", async () => {
    await reloader.heard({ sha256: sha(file("U0BOB0001")), process: "worker@test:2" });
    expect(codes()).toEqual([]);
    // another process saved the new file before this one's watch saw it
    await writeFile(path, file("U0BOB0001, U0ERIN001"));
    await reloader.heard({ sha256: sha(file("U0BOB0001, U0ERIN001")), process: "worker@test:2" });
    expect(codes()).toEqual(["CONFIG_RELOADED"]);
    expect(lines().at(-1)?.msg).toBe(
      "config reloaded (worker@test:2 loaded a file this process had not read): approvers added: U0ERIN001",
    );
    // a reload on a note is not noted again (the start's note only)
    expect(notes).toHaveLength(1);
  });

  it("a note of a file that differs from its own warns once that the processes run different files", async () => {
    const theirs = sha("another file");
    await Promise.all([
      reloader.heard({ sha256: theirs, process: "worker@elsewhere:7" }),
      reloader.heard({ sha256: theirs, process: "worker@elsewhere:7" }),
    ]);
    expect(codes()).toEqual(["CONFIG_DIFFERS"]);
    expect(lines().at(-1)?.msg).toBe(
      `worker@elsewhere:7 runs a config file that differs from this process's ${path}: every process that shares a Redis must run the same config file (copy it, or point MODELSWAP_CONFIG at one file)`,
    );
    expect(live.current().file.approvers.users).toEqual(["U0BOB0001"]);
  });
});
