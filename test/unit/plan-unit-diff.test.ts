import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unifiedDiff } from "../../src/plan/unit-diff.ts";
import { tempDir } from "../support/tmp.ts";

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir("modelswap-diff-");
});
afterAll(() => dir.remove());

/** Applies a diff with `git apply` (outside a repository it works like patch) and returns the result. */
function gitApply(oldText: string, diff: string): string {
  const file = join(dir.path, "unit.service");
  writeFileSync(file, oldText);
  const run = spawnSync("git", ["apply", "--unsafe-paths", "-p0", "-"], {
    cwd: dir.path,
    input: diff,
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`git apply failed: ${run.stderr}\n${diff}`);
  return readFileSync(file, "utf8");
}

/** A strict applier of our own: every context and removed line must match where the hunk says. */
function apply(oldText: string, diff: string): string {
  if (diff === "") return oldText;
  const oldNoEol = oldText !== "" && !oldText.endsWith("\n");
  const old = oldText === "" ? [] : (oldNoEol ? oldText : oldText.slice(0, -1)).split("\n");
  const lines = diff.replace(/\n$/, "").split("\n").slice(2);
  const out: { text: string; noEol: boolean }[] = [];
  let at = 0;
  const copyOldTo = (end: number) => {
    while (at < end) {
      out.push({ text: old[at]!, noEol: oldNoEol && at === old.length - 1 });
      at++;
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$/.exec(line);
    if (header !== null) {
      copyOldTo(Number(header[1]) - (header[2] === "0" ? 0 : 1));
      continue;
    }
    const noEol = lines[i + 1] === "\\ No newline at end of file";
    if (noEol) i++;
    if (line.startsWith(" ") || line.startsWith("-")) {
      if (old[at] !== line.slice(1)) throw new Error(`mismatch at old line ${at + 1}: ${line}`);
      at++;
    }
    if (line.startsWith(" ") || line.startsWith("+")) out.push({ text: line.slice(1), noEol });
  }
  copyOldTo(old.length);
  if (out.length === 0) return "";
  return `${out.map((l) => l.text).join("\n")}${out.at(-1)!.noEol ? "" : "\n"}`;
}

describe("unifiedDiff", () => {
  it("is empty for equal texts", () => {
    expect(unifiedDiff("a\nb\n", "a\nb\n", "x", "y")).toBe("");
  });

  it("prints diff -u's format with 3 lines of context, merging hunks closer than 7 lines", () => {
    const oldText = `${["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"].join("\n")}\n`;
    const newText = `${["a", "b", "c", "d", "E", "f", "g", "h", "i", "j", "k"].join("\n")}\n`;
    expect(unifiedDiff(oldText, newText, "old.service", "new.service")).toBe(
      [
        "--- old.service",
        "+++ new.service",
        "@@ -2,9 +2,10 @@",
        " b",
        " c",
        " d",
        "-e",
        "+E",
        " f",
        " g",
        " h",
        " i",
        " j",
        "+k",
        "",
      ].join("\n"),
    );
  });

  it("matches GNU diff -u byte for byte on unit-file changes", () => {
    const numbered = (n: number, change: (i: number) => string | undefined) =>
      Array.from({ length: n }, (_, i) => change(i) ?? `line ${i}`).join("\n") + "\n";
    const cases: [string, string][] = [
      [
        "[Unit]\nDescription=old\n\n[Service]\nExecStart=/x --a 1\nRestart=on-failure\n\n[Install]\nWantedBy=multi-user.target\n",
        "[Unit]\nDescription=new\n\n[Service]\nExecStart=/x --a 2\nRestart=on-failure\nRestartSec=10\n\n[Install]\nWantedBy=multi-user.target\n",
      ],
      [
        numbered(30, () => undefined),
        numbered(30, (i) => (i === 3 || i === 20 ? `changed ${i}` : undefined)),
      ],
      [numbered(12, () => undefined), numbered(10, () => undefined)],
    ];
    for (const [oldText, newText] of cases) {
      writeFileSync(join(dir.path, "a"), oldText);
      writeFileSync(join(dir.path, "b"), newText);
      const gnu = spawnSync("diff", ["-u", "--label", "a", "--label", "b", "a", "b"], {
        cwd: dir.path,
        encoding: "utf8",
      });
      expect(unifiedDiff(oldText, newText, "a", "b")).toBe(gnu.stdout);
    }
  });

  it("diffs from nothing, to nothing, and without final newlines, as git apply reads them", () => {
    const cases: [string, string][] = [
      ["", "a\nb\n"],
      ["a\nb\n", ""],
      ["a\nb", "a\nb\n"],
      ["a\nb\n", "a\nc"],
      ["x", "y"],
      ["a\na", "a\n"],
      ["a\n", "a\na"],
      ["1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n1\n2\n3\n5\n6\n7\n8\n9\n10\n"],
    ];
    for (const [oldText, newText] of cases) {
      const diff = unifiedDiff(oldText, newText, "unit.service", "unit.service");
      expect(gitApply(oldText, diff), JSON.stringify([oldText, newText])).toBe(newText);
    }
  });

  it("turns any text into any other (property, with a strict applier)", () => {
    const text = fc
      .tuple(
        fc.array(fc.constantFrom("a", "b", "c", "", "ExecStart=x", " d"), { maxLength: 30 }),
        fc.boolean(),
      )
      .map(([lines, eol]) => (lines.length === 0 ? "" : lines.join("\n") + (eol ? "\n" : "")));
    fc.assert(
      fc.property(text, text, (oldText, newText) => {
        const diff = unifiedDiff(oldText, newText, "a", "b");
        expect(diff === "").toBe(oldText === newText);
        expect(apply(oldText, diff)).toBe(newText);
      }),
      { numRuns: 1000 },
    );
  });

  it("stays fast on large texts and still applies", () => {
    const big = Array.from({ length: 5000 }, (_, i) => `line ${i}`);
    const changed = big.map((l, i) => (i % 7 === 0 ? `${l} changed` : l));
    const started = Date.now();
    const diff = unifiedDiff(`${big.join("\n")}\n`, `${changed.join("\n")}\n`, "a", "b");
    expect(Date.now() - started).toBeLessThan(2000);
    expect(apply(`${big.join("\n")}\n`, diff)).toBe(`${changed.join("\n")}\n`);
  });
});
