import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { firstSentence, fitSentences } from "../../src/reporter/sentences.ts";

describe("fitSentences", () => {
  const why =
    "The serving model holds 88.0 GiB of each GPU and 7.6 GiB is free. The new one needs 27.3 GiB per GPU at tp 8; blue/green would need spare GPUs.";

  it("keeps text that fits as it is", () => {
    expect(fitSentences(why, 500)).toBe(why);
  });

  it("keeps whole sentences and says more was said, never a decimal point taken for a full stop", () => {
    expect(fitSentences(why, 100)).toBe(
      "The serving model holds 88.0 GiB of each GPU and 7.6 GiB is free. …",
    );
    expect(fitSentences(why, 130)).toBe(
      "The serving model holds 88.0 GiB of each GPU and 7.6 GiB is free. The new one needs 27.3 GiB per GPU at tp 8. …",
    );
  });

  it("cuts a single sentence longer than the room at a word", () => {
    expect(fitSentences("a b c d e f g h i j k l m n o p", 12)).toBe("a b c d e f…");
  });

  it("never returns more than it is given room for (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), fc.integer({ min: 4, max: 300 }), (text, max) => {
        expect(fitSentences(text, max).length).toBeLessThanOrEqual(Math.max(max, 4));
      }),
    );
  });
});

describe("firstSentence", () => {
  it("takes the sentence up to its full stop, a decimal point kept", () => {
    expect(firstSentence("Host RAM 1.0 TiB is short. It needs 2.6 TiB.")).toBe("Host RAM 1.0 TiB is short");
    expect(firstSentence("One sentence only.")).toBe("One sentence only");
  });
});
