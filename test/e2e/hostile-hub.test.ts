import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelDirFor } from "../../src/plan/model-dir.ts";
import { type Bench, QUICK_BENCH, startBench } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * The Hub is untrusted: a repository whose file list holds a name that could climb out of the models
 * directory, run something in a shell, pass for an option or disguise itself is refused before anything
 * is downloaded, with a message that says which name and why; the host is left exactly as it was. A name
 * that is odd but harmless (spaces, `+@=,`) is downloaded to exactly that path.
 */
const MARKER = `pwned${randomBytes(4).toString("hex")}`;
let bench: Bench;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 8 },
    hosts: [
      { name: "gpu-1", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-v", serving: { preset: "qwen3-fp8-dense" }, vllm: "only" },
    ],
  });
  await bench.startBot();
  swaps = new SwapDriver(bench);
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

/** A real-looking model (config.json, safetensors) with one extra file of the given name. */
function addRepo(id: string, extraFile: string): { id: string; sha: string } {
  const model = makeModel("llama-bf16-small", { id, gated: false });
  model.files.push({ path: extraFile, size: 3, content: "hi\n" });
  const added = bench.hub.addModel(model);
  return { id, sha: added.sha ?? "" };
}

/** The words of a message's blocks, as people read them. */
function textOf(value: unknown): string {
  if (Array.isArray(value)) return value.map(textOf).join("\n");
  if (value === null || typeof value !== "object") return "";
  return Object.entries(value)
    .map(([key, v]) => (key === "text" && typeof v === "string" ? v : textOf(v)))
    .join("\n");
}

/** Every path under a directory (files and folders), relative to it. */
async function tree(dir: string): Promise<Set<string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return new Set(entries.map((e) => relative(dir, join(e.parentPath, e.name))));
}

async function markersUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  return entries.filter((p) => p.includes(MARKER)).map((p) => join(dir, p));
}

describe("a Hub that lists hostile file names", () => {
  const [engine, hostName] = ["SGLang", "gpu-1"];
  it("gets each such repository refused before anything is fetched, and the host stays untouched", async () => {
    const host = bench.host(hostName);
    const hostile: Array<[string, RegExp]> = [
      [`../../${MARKER}-escape.json`, /a "\.\." segment/],
      [`weights/../../../${MARKER}-escape2.json`, /a "\.\." segment/],
      [`${host.sim.root}/${MARKER}-absolute.json`, /an absolute path/],
      [`$(touch ${MARKER}-subst).json`, /contains "\$"/],
      [`\`touch ${MARKER}-tick\`.json`, /contains "`"/],
      [`x;touch ${MARKER}-semi;.json`, /contains ";"/],
      [`docs/x\ntouch ${MARKER}-newline.json`, /a newline/],
      [`--output=${MARKER}-option.json`, /starts with "-" \(it would read as an option\)/],
      ["c\u043enfig.json", /non-ASCII character U\+043E \(look-alike letters/], // Cyrillic о
      [`${"a".repeat(300)}.json`, /longer than 255 characters/],
      [".cache/huggingface/download/model.safetensors.metadata", /inside \.cache\//],
    ];
    const before = await tree(host.sim.root);
    const callsBefore = (await host.sim.calls()).length;

    for (const [i, [name, reason]] of hostile.entries()) {
      const repo = addRepo(`evil-org/${engine.toLowerCase()}-model-${i}`, name);
      const card = await swaps.request(repo.id, hostName);
      const failed = await swaps.outcome(card.ts, /Failed/, 30_000);
      const shown = textOf(failed.blocks);
      expect(shown).toContain("which modelswap refuses because");
      expect(shown).toMatch(reason);
      // the card says why (with the code); what to do is said once, at the end of the thread
      expect(shown).toContain("(HUB_BAD_RESPONSE)");
      expect((await swaps.finalLine(card.ts)).text).toContain("*Fix:* Nothing was downloaded or changed");
      expect(
        bench.hub.requests().filter((r) => r.repo === repo.id && r.kind === "resolve"),
        `no file of ${repo.id} was fetched`,
      ).toEqual([]);
    }

    // nothing new on the host outside its bookkeeping (state/: the shims' call log, journals)
    const after = await tree(host.sim.root);
    const added = [...after].filter((p) => !before.has(p) && !p.startsWith("state"));
    expect(added).toEqual([]);
    // no payload ran anywhere: not on the host, not in the bench, not in the login's home or here
    const found = [
      ...(await markersUnder(bench.dir)),
      ...(await readdir(homedir())).filter((f) => f.includes(MARKER)),
      ...(await readdir(process.cwd())).filter((f) => f.includes(MARKER)),
      ...(await readdir("/tmp")).filter((f) => f.includes(MARKER)),
    ];
    expect(found).toEqual([]);
    // and no command on the host ever saw one of these names
    const calls = (await host.sim.calls()).slice(callsBefore);
    expect(calls.filter((c) => c.cmd === "hf")).toEqual([]);
    expect(JSON.stringify(calls)).not.toContain(MARKER);
  }, 120_000);

  // the refusals come before any engine is asked; what an engine does with the files it is given is each engine's
  it.each([
    ["SGLang", "gpu-1"],
    ["vLLM", "gpu-v"],
  ])(
    "downloads a name that is odd but harmless to exactly that path, checked and served by %s",
    async (engine, hostName) => {
      // at the top level: only what the engine may read there is downloaded (subfolders are not)
      const odd = "Read me v2+final@x=1,2.txt";
      const repo = addRepo(`odd-org/${engine.toLowerCase()}-model`, odd);
      const card = await swaps.request(repo.id, hostName);
      await swaps.approve(card.ts);
      await swaps.outcome(card.ts, /Swapped/, 60_000);
      const modelDir = modelDirFor(bench.host(hostName).sim.modelsDir, repo.id, repo.sha);
      expect(await readFile(join(modelDir, odd), "utf8")).toBe("hi\n");
    },
    90_000,
  );
});
