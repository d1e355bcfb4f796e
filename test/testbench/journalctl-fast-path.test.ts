import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { journalctlTailFastPath } from "../../testbench/gpu-host/journalctl-fast-path.ts";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers the health wait's `journalctl -u <unit> -n <N> --no-pager -o cat` in the shim's shell
 * wrapper (testbench/gpu-host/journalctl-fast-path.ts). It must print exactly what the Node shim prints:
 * both read the same journal files — in order, out of order, with tabs in a message, with broken lines,
 * empty, missing — and must agree byte for byte; the fast answer must not start Node (its wrapper points
 * at a script that does not exist).
 */
let root: string;
let fast: string;

const answer = (command: string, args: string[]) => shimAnswer(root, command, args);

const at = (second: number, ms = 0) => new Date(Date.UTC(2026, 11, 6, 21, 0, second, ms)).toISOString();
const entry = (second: number, message: string, ms = 0) => `${at(second, ms)}\t4242\tpython\t${message}`;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "journal-fast-path-"));
  await mkdir(join(root, "state", "journal"), { recursive: true });
  await writeFile(join(root, "state", "config.json"), JSON.stringify({ name: "gpu-1", gpus: [] }));
  fast = join(root, "bin", "journalctl");
  // the fast path in front of a script that does not exist: only an answer the shell gave itself succeeds
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, journalctlTailFastPath(root));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("journalctl -u UNIT -n N --no-pager -o cat answered by the shell", () => {
  const journals: Array<[string, string | undefined]> = [
    ["no journal file", undefined],
    ["an empty file", ""],
    [
      "a server's start, in order",
      `${[
        entry(1, "Starting sglang-gpu-1.service - SGLang..."),
        entry(2, "[2026-12-06 21:00:02] server_args=ServerArgs(model_path='/models/q', tp_size=8)"),
        entry(3, "Traceback (most recent call last):"),
        entry(3, '  File "/opt/sglang/launch_server.py", line 14, in <module>', 1),
        entry(4, "torch.OutOfMemoryError: CUDA out of memory."),
      ].join("\n")}\n`,
    ],
    [
      "lines out of time order, equal times kept in file order",
      `${[entry(9, "late"), entry(2, "early one"), entry(2, "early two"), entry(5, "middle")].join("\n")}\n`,
    ],
    [
      "tabs inside a message, an empty message, broken lines, no final newline",
      [
        entry(1, "a\tb\tc"),
        "not a journal line",
        `${at(2)}\t1\tpython`,
        entry(3, ""),
        "",
        entry(4, "last, unterminated"),
      ].join("\n"),
    ],
    ["one entry whose message is empty", `${entry(1, "")}\n`],
    ["quotes, backslashes, $ and *", `${entry(1, `say "hi" \\ $HOME * ?`)}\n`],
  ];

  it.each(journals)("%s: the same bytes as the Node shim, at -n 0, 2, 200", async (what, text) => {
    const unit = `case-${journals.findIndex(([w]) => w === what)}`;
    if (text !== undefined) await writeFile(join(root, "state", "journal", `${unit}.service.log`), text);
    for (const n of ["0", "2", "200"]) {
      const args = ["-u", unit, "-n", n, "--no-pager", "-o", "cat"];
      const slow = await answer(process.execPath, [shimScriptPath("journalctl"), ...args]);
      const quick = await answer(fast, args);
      expect(quick, `-n ${n}`).toEqual(slow);
      expect(quick.code).toBe(0);
    }
  });

  it("prints what the journal holds, newest last (the check can fail)", async () => {
    await writeFile(
      join(root, "state", "journal", "seen.service.log"),
      `${[entry(3, "third"), entry(1, "first"), entry(2, "second")].join("\n")}\n`,
    );
    expect(await answer(fast, ["-u", "seen.service", "-n", "2", "--no-pager", "-o", "cat"])).toEqual({
      out: "second\nthird\n",
      code: 0,
    });
  });

  it("records each call where the bench counts calls", async () => {
    await answer(fast, ["-u", "sglang-x", "-n", "200", "--no-pager", "-o", "cat"]);
    const lines = (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n");
    const last = JSON.parse(lines.at(-1)!);
    expect(last).toMatchObject({
      cmd: "journalctl",
      argv: ["-u", "sglang-x", "-n", "200", "--no-pager", "-o", "cat"],
    });
    expect(Date.now() - Date.parse(last.at)).toBeLessThan(60_000);
  });

  it("leaves every other form to the Node shim", async () => {
    for (const args of [
      ["-u", "a", "-n", "20", "--no-pager"],
      ["-u", "a", "-n", "20", "--no-pager", "-o", "short"],
      ["-u", "sglang*", "-n", "20", "--no-pager", "-o", "cat"],
      ["-u", "a$(id)", "-n", "20", "--no-pager", "-o", "cat"],
      ["-u", "a", "-n", "all", "--no-pager", "-o", "cat"],
      ["-n", "20", "-u", "a", "--no-pager", "-o", "cat"],
    ]) {
      const result = await answer(fast, args);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, args.join(" ")).not.toBe(0);
    }
  });
});
