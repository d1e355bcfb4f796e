import { rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { watchConfigFile } from "../../src/reload/watch-config-file.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * The config file's watch (src/reload/watch-config-file.ts) on a real directory: each way a file gets
 * saved is seen once its writes settle, several times over (a file renamed over the old one ends the
 * old one's watch); other files of the directory are not.
 */
let dir: { path: string; remove: () => Promise<void> };
let path: string;
let seen: number;
let watch: { stop(): void };

beforeEach(async () => {
  dir = await tempDir();
  path = join(dir.path, "modelswap.yaml");
  await writeFile(path, "a: 1\n");
  seen = 0;
  watch = watchConfigFile(path, () => seen++, 150);
});
afterEach(async () => {
  watch.stop();
  await dir.remove();
});

const quiet = () => new Promise((resolve) => setTimeout(resolve, 500));

describe("watchConfigFile", () => {
  it("sees a write in place, and a burst of writes as one change", async () => {
    await writeFile(path, "a: 2\n");
    await writeFile(path, "a: 3\n");
    await until(() => seen > 0, { what: "the change", timeoutMs: 5000 });
    await quiet();
    expect(seen).toBe(1);
  });

  it("sees an editor's save (a new file renamed over it), again and again", async () => {
    for (let i = 1; i <= 3; i++) {
      await writeFile(join(dir.path, ".modelswap.yaml.swp"), `a: ${i}\n`);
      await rename(join(dir.path, ".modelswap.yaml.swp"), path);
      await until(() => seen >= i, { what: `save ${i}`, timeoutMs: 5000 });
    }
    await quiet();
    expect(seen).toBe(3);
  });

  it("sees a Kubernetes ConfigMap's swap of its ..data link, and the file deleted then written again", async () => {
    await writeFile(join(dir.path, "..data_tmp"), "");
    await rename(join(dir.path, "..data_tmp"), join(dir.path, "..data"));
    await until(() => seen === 1, { what: "the ..data swap", timeoutMs: 5000 });
    await rm(path);
    await writeFile(path, "a: 4\n");
    await until(() => seen === 2, { what: "the file written again", timeoutMs: 5000 });
  });

  it("ignores the other files of its directory", async () => {
    await writeFile(join(dir.path, "bot.log"), "a line\n");
    await writeFile(join(dir.path, "id_ed25519"), "a key\n");
    await quiet();
    expect(seen).toBe(0);
  });
});
