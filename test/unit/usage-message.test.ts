import { describe, expect, it } from "vitest";
import { allCommands } from "../../commands/index.ts";
import { optionWord } from "../../src/grammar/option-word.ts";
import { usageMessage } from "../../src/slack/usage.ts";

describe("/llm help", () => {
  const help = usageMessage(allCommands());
  const shown = JSON.stringify(help.blocks);

  it("lists every sub-command with its usage", () => {
    for (const command of allCommands()) expect(shown).toContain(command.usage.split(" ")[1]);
  });

  it("says options may be typed --opt value or --opt=value, and the forms it names are the ones read", () => {
    expect(shown).toContain("`--host gpu-1` or `--host=gpu-1`");
    expect(shown).toContain("`—host`");
    // The forms help promises are what the option grammar admits.
    expect(optionWord("--host=gpu-1")).toEqual({ name: "--host", inline: "gpu-1" });
    expect(optionWord("—host")).toEqual({ name: "--host", inline: undefined });
  });
});
