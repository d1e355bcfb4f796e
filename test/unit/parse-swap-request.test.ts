import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseModelRef } from "../../src/grammar/model-ref.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { quote } from "../../src/host/shell-quote.ts";

describe("parseModelRef: the accepted forms", () => {
  it.each([
    ["https://huggingface.co/nvidia/Qwen3.5-397B-A17B-NVFP4", "nvidia/Qwen3.5-397B-A17B-NVFP4", "main"],
    ["https://huggingface.co/nvidia/Qwen3.5-397B-A17B-NVFP4/", "nvidia/Qwen3.5-397B-A17B-NVFP4", "main"],
    ["https://huggingface.co/moonshotai/Kimi-K2-Instruct/tree/v1.1", "moonshotai/Kimi-K2-Instruct", "v1.1"],
    ["https://hf.co/meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "main"],
    ["hf://Qwen/Qwen3-8B@0123abcd", "Qwen/Qwen3-8B", "0123abcd"],
    ["hf://Qwen/Qwen3-8B", "Qwen/Qwen3-8B", "main"],
    ["Qwen/Qwen3-8B", "Qwen/Qwen3-8B", "main"],
    ["Qwen/Qwen3-8B@refs/pr/4", "Qwen/Qwen3-8B", "refs/pr/4"],
    ["<https://huggingface.co/Qwen/Qwen3-8B>", "Qwen/Qwen3-8B", "main"],
    ["<https://huggingface.co/Qwen/Qwen3-8B|huggingface.co/Qwen/Qwen3-8B>", "Qwen/Qwen3-8B", "main"],
  ])("%s", (input, repo, revision) => {
    expect(parseModelRef(input)).toEqual({ repo, revision });
  });

  it.each([
    "http://huggingface.co/Qwen/Qwen3-8B",
    "https://evil.example/Qwen/Qwen3-8B",
    "https://huggingface.co/Qwen",
    "https://huggingface.co/datasets/foo/bar/baz",
    "Qwen/Qwen3-8B;reboot",
    "Qwen/$(id)",
    "Qwen/Qwen3-8B@main..evil",
    "Qwen/Qwen3-8B@-rf",
    "../etc/passwd",
    "Qwen/../x",
    "Qwen/Qwen3 8B",
    "Qwen/Qwen3\n8B",
    "Ｑwen/Qwen3-8B", // fullwidth Q
    "Qwen/Qwen3‐8B", // Unicode hyphen
    "a".repeat(400),
  ])("refuses %j", (input) => {
    expect(parseModelRef(input)).toBeUndefined();
  });

  it("admits only characters that quote() leaves alone, whatever the input (property)", () => {
    const hostile = fc.oneof(
      fc.string({ unit: "binary", maxLength: 120 }),
      fc
        .tuple(
          fc.constantFrom("", "https://huggingface.co/", "hf://", "<"),
          fc.string({ maxLength: 40 }),
          fc.string({ maxLength: 40 }),
        )
        .map(([prefix, a, b]) => `${prefix}${a}/${b}`),
      fc.constantFrom("$(reboot)/x", "a/b`id`", "a/b'", 'a/"b"', "a/b\nc", "a/b@$(x)", "a/b@;x", "a/ｂ"),
    );
    fc.assert(
      fc.property(hostile, (input) => {
        const ref = parseModelRef(input);
        if (ref === undefined) return;
        // Whatever got through is a plain word: quoting changes nothing, so no shell character survived.
        expect(quote(ref.repo)).toBe(ref.repo);
        expect(quote(ref.revision)).toBe(ref.revision);
        expect(ref.repo).toMatch(/^[A-Za-z0-9_][A-Za-z0-9._-]*\/[A-Za-z0-9_][A-Za-z0-9._-]*$/);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("parseSwapRequest", () => {
  it("reads options in any order", () => {
    expect(
      parseSwapRequest([
        "--host",
        "gpu-1",
        "Qwen/Qwen3-8B",
        "--tp",
        "4",
        "--dry-run",
        "--engine-ref",
        "v0.5.2",
      ]),
    ).toEqual({
      ok: true,
      request: {
        model: { repo: "Qwen/Qwen3-8B", revision: "main" },
        host: "gpu-1",
        tp: 4,
        dryRun: true,
        engineRef: "v0.5.2",
      },
    });
  });

  it("reads options the way people type them: --opt=value, and an em or en dash from autocorrect", () => {
    const typed = [
      ["Qwen/Qwen3-8B", "--host=gpu-1", "--tp=8", "--engine-ref=v0.5.2", "--dry-run"],
      ["Qwen/Qwen3-8B", "—host", "gpu-1", "—tp", "8", "—engine-ref", "v0.5.2", "—dry-run"],
      ["Qwen/Qwen3-8B", "–host", "gpu-1", "–tp=8", "—engine-ref=v0.5.2", "–dry-run"],
    ];
    for (const args of typed) {
      expect(parseSwapRequest(args), args.join(" ")).toEqual({
        ok: true,
        request: {
          model: { repo: "Qwen/Qwen3-8B", revision: "main" },
          host: "gpu-1",
          tp: 8,
          dryRun: true,
          engineRef: "v0.5.2",
        },
      });
    }
  });

  it.each([
    [["a/b", "--host="], "--host needs"],
    [["a/b", "--host=GPU;1"], "--host needs"],
    [["a/b", "--host=--tp"], "--host needs"],
    [["a/b", "--tp=0"], "--tp needs"],
    [["a/b", "—tp=x"], "--tp needs"],
    [["a/b", "--engine-ref=$(id)"], "--engine-ref needs"],
    [["a/b", "--engine-ref=-rf"], "--engine-ref needs"],
    [["a/b", "--dry-run=yes"], "--dry-run takes no value"],
    [["a/b", "—force"], "unknown option --force"],
    [["—"], "not a Hugging Face model"],
    [["a/b", "-host", "gpu-1"], "unknown option -host"],
  ])("still refuses %j with a reason", (args, reason) => {
    const result = parseSwapRequest(args);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(reason);
  });

  it.each([
    [[], "name the model"],
    [["a/b", "c/d"], "one model only"],
    [["a/b", "--tp", "0"], "--tp needs"],
    [["a/b", "--tp"], "--tp needs"],
    [["a/b", "--host", "GPU;1"], "--host needs"],
    [["a/b", "--engine-ref", "$(id)"], "--engine-ref needs"],
    [["a/b", "--force"], "unknown option --force"],
    [["not a model"], "not a Hugging Face model"],
  ])("refuses %j with a reason", (args, reason) => {
    const result = parseSwapRequest(args);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(reason);
  });
});
