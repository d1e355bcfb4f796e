import { spawnSync } from "node:child_process";
import { posix } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { downloadScript, includeArgs, verificationFiles } from "../../jobs/swap/stages/download-task.ts";
import { sh } from "../../src/host/shell-quote.ts";
import { showName, unsafePathReason } from "../../src/hub/hub-schemas.ts";
import type { ModelInfo } from "../../src/hub/types.ts";
import { modelDirFor } from "../../src/plan/model-dir.ts";

/**
 * File names in a Hub answer are untrusted: they become paths under the model's directory on the host
 * and lines of the download's verification files. `unsafePathReason` is the gate; these tests say what it
 * lets through can neither leave the model's directory nor be misread by the shell that checks the files.
 */
const MODEL_DIR = modelDirFor("/srv/models", "org/model", "0123456789abcdef0123456789abcdef01234567");

const HOSTILE: Array<[string, RegExp]> = [
  ["../../etc/cron.d/evil", /"\.\." segment/],
  ["weights/../../../root/.ssh/authorized_keys", /"\.\." segment/],
  ["/etc/passwd", /absolute path/],
  ["$(touch pwned).json", /contains "\$"/],
  ["`touch pwned`.json", /contains "`"/],
  ["x;touch pwned;.json", /contains ";"/],
  ["a|b.json", /contains "\|"/],
  ["a&b.json", /contains "&"/],
  ["a>b.json", /contains ">"/],
  ["it's.json", /contains "'"/],
  ['say "hi".json', /contains "\\""/],
  ["*.safetensors", /contains "\*"/],
  ["~/x.json", /contains "~"/],
  ["model\n.safetensors", /newline/],
  ["model\r.safetensors", /newline/],
  ["model\t.safetensors", /control character/],
  ["-rf", /starts with "-"/],
  ["--output=/etc/passwd", /starts with "-"/],
  ["docs/-n", /starts with "-"/],
  [" model.safetensors", /starts or ends with a space/],
  ["model.safetensors ", /starts or ends with a space/],
  ["соnfig.json", /non-ASCII character U\+0441/], // Cyrillic с and о
  ["config\u2024json", /U\+2024/], // one dot leader, looks like "."
  ["\u2025/x.json", /U\+2025/], // two dot leader, looks like ".."
  ["model\u202Esnoj.safetensors", /U\+202E/], // right-to-left override
  ["model\u200B.safetensors", /U\+200B/], // zero-width space
  ["ｍodel.safetensors", /U\+FF4D/], // fullwidth m
  ["a／b.json", /U\+FF0F/], // fullwidth solidus
  [`${"a".repeat(256)}.json`, /longer than 255/],
  [`${"a/".repeat(600)}x`, /longer than 1024/],
  [".cache/huggingface/download/model.safetensors.metadata", /inside \.cache\//],
  ["a//b.json", /empty segment/],
  ["a/./b.json", /"\." segment/],
  ["", /empty/],
];

const PLAIN = [
  "config.json",
  ".gitattributes",
  "model-00001-of-00019.safetensors",
  "model.safetensors.index.json",
  "original/params.json",
  "tokenizer.model",
  "onnx/model_q4f16.onnx",
  "images/Screen shot 2024-01-01 at 10.00.00.png",
  "v1.0+build@2=ok,yes.txt",
  "a".repeat(255),
];

describe("file names from the Hub", () => {
  for (const [name, reason] of HOSTILE) {
    it(`refuses ${showName(name).slice(0, 60)}`, () => {
      expect(unsafePathReason(name)).toMatch(reason);
    });
  }

  it("accepts the names real model repositories use", () => {
    for (const name of PLAIN) expect([name, unsafePathReason(name)]).toEqual([name, undefined]);
  });

  it("shows a refused name quoted, cut, and with every invisible or look-alike character escaped", () => {
    expect(showName("model\u202Esnoj.safetensors")).toBe('"model\\u202esnoj.safetensors"');
    expect(showName("соnfig.json")).toBe('"\\u0441\\u043enfig.json"');
    expect(showName("x\n$(id)")).toBe('"x\\n$(id)"');
    const long = showName("a".repeat(5000));
    expect(long.length).toBeLessThan(210);
    expect(long).toMatch(/…"$/);
  });

  /** Strings built from the pieces attacks are made of, plus arbitrary Unicode. */
  const piece = fc.constantFrom(
    "..",
    ".",
    "/",
    "//",
    "-",
    "--",
    " ",
    "\n",
    "\0",
    "\\",
    "$(",
    ")",
    "`",
    ";",
    "'",
    '"',
    "~",
    "*",
    "?",
    "[",
    "%2e",
    ".cache",
    "\u2024",
    "\u202E",
    "\uFF0F",
    "с",
    "a",
    "Z",
    "0",
    "_",
    "+",
    "@",
    "=",
    ",",
    "model.safetensors",
  );
  const candidate = fc.oneof(
    fc.array(piece, { minLength: 1, maxLength: 12 }).map((parts) => parts.join("")),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.string({ unit: "grapheme-ascii", maxLength: 40 }),
  );

  it("lets through only names that stay inside the model's directory and read as no option", () => {
    fc.assert(
      fc.property(candidate, (name) => {
        if (unsafePathReason(name) !== undefined) return;
        const target = posix.resolve(MODEL_DIR, name);
        expect(target.startsWith(`${MODEL_DIR}/`)).toBe(true);
        expect(posix.relative(MODEL_DIR, target)).toBe(name);
        expect(name).toMatch(/^[A-Za-z0-9 ._+@=,/-]+$/);
        for (const part of name.split("/")) {
          expect(part).not.toMatch(/^-|^ | $/);
          expect(part).not.toBe("..");
        }
        expect(name.split("/")[0]).not.toBe(".cache");
      }),
      { numRuns: 3000 },
    );
  });

  it("lets through only names the download's checks read back exactly, through a real bash", () => {
    // Collect accepted names (plenty with spaces and punctuation), then run the verification loop of the
    // download script on them: every path must come back byte for byte, one per line.
    const accepted = new Set<string>(PLAIN);
    const odd = fc.array(fc.constantFrom("a", " ", ".", "-", "_", "+", "@", "=", ",", "/", "Z", "9"), {
      minLength: 1,
      maxLength: 16,
    });
    for (const name of fc.sample(
      fc.oneof(
        candidate,
        odd.map((p) => p.join("")),
      ),
      4000,
    )) {
      if (unsafePathReason(name) === undefined) accepted.add(name);
    }
    expect(accepted.size).toBeGreaterThan(200);
    const names = [...accepted];
    const info = {
      repo: "org/model",
      sha: "0123456789abcdef0123456789abcdef01234567",
      files: names.map((path, i) => ({ path, size: i, sha256: "f".repeat(64) })),
    } as unknown as ModelInfo;
    const { sizes, sums } = verificationFiles(info);
    // the loop the download script runs over its sizes file, reading from stdin instead
    const script = downloadScript(info, MODEL_DIR, "/tmp/task").text;
    expect(script).toContain("while read -r size path; do");
    const read = spawnSync("bash", ["-c", `while read -r size path; do printf '%s\\0' "$path"; done`], {
      input: sizes,
      encoding: "utf8",
    });
    expect(read.status).toBe(0);
    expect(read.stdout.split("\0").slice(0, -1)).toEqual(names);
    // hf download is told exactly these files, each an fnmatch pattern of itself (no [ * ? in them)
    const include = spawnSync("bash", ["-c", `printf '%s\\0' ${sh`${includeArgs(info)}`.text}`], {
      encoding: "utf8",
    });
    expect(include.stdout.split("\0").slice(0, -1)).toEqual(names.flatMap((n) => ["--include", n]));
    // sha256sum's check-file format: two spaces, then the name to the end of the line
    expect(
      sums
        .split("\n")
        .slice(0, -1)
        .map((line) => line.slice(66)),
    ).toEqual(names);
  });

  it("says what it downloads where in words bash reads back exactly, whatever the directory", () => {
    const sha = "0123456789abcdef0123456789abcdef01234567";
    fc.assert(
      fc.property(fc.string({ unit: "binary", minLength: 1, maxLength: 30 }), (raw) => {
        const modelDir = `/srv/${raw.replaceAll("\0", "")}`;
        const script = downloadScript(
          { repo: "org/model", sha, files: [] } as unknown as ModelInfo,
          modelDir,
          "/srv/t/download",
        ).text;
        const echo = script.split("\necho ")[1]?.split("\nhf download")[0];
        const out = spawnSync("bash", ["-c", `echo ${echo}`], { encoding: "utf8" });
        expect(out.stdout).toBe(`modelswap: downloading org/model@${sha} into ${modelDir}\n`);
      }),
      { numRuns: 200 },
    );
  });
});
