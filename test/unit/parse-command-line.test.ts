import { describe, expect, it } from "vitest";
import type { CliCommand } from "../../src/cli/cli-command.ts";
import { modelswapCommands } from "../../src/cli/modelswap-commands.ts";
import { parseCommandLine } from "../../src/cli/parse-command-line.ts";

/** The real tree with one more command, as a new sub-command would be added: with an option of its own. */
function withDoctor(): CliCommand {
  const root = modelswapCommands({});
  const doctor: CliCommand = {
    name: "doctor",
    summary: "check every host",
    options: { host: { type: "string", valueName: "host", description: "only this host" } },
    run: async () => 0,
  };
  return { ...root, commands: [...(root.commands ?? []), doctor] };
}

describe("parseCommandLine", () => {
  it("runs the default command on an empty line, and names the command's path", () => {
    expect(parseCommandLine([], withDoctor())).toMatchObject({ kind: "run", path: ["modelswap", "start"] });
    expect(parseCommandLine(["config", "check", "x.yaml"], withDoctor())).toMatchObject({
      kind: "run",
      path: ["modelswap", "config", "check"],
      input: { positionals: ["x.yaml"] },
    });
  });

  it("gives a new command --help, --version, its options (--opt value and --opt=value) and refusals", () => {
    const root = withDoctor();
    const help = parseCommandLine(["doctor", "--help"], root);
    expect(help).toMatchObject({ kind: "help" });
    if (help.kind === "help") expect(help.usage).toContain("--host <host>   only this host");
    expect(parseCommandLine(["doctor", "--version"], root)).toEqual({ kind: "version" });
    for (const args of [
      ["doctor", "--host", "gpu-1"],
      ["doctor", "--host=gpu-1"],
    ]) {
      expect(parseCommandLine(args, root)).toMatchObject({
        kind: "run",
        input: { values: { host: "gpu-1" } },
      });
    }
    expect(parseCommandLine(["doctor", "--host"], root)).toMatchObject({ kind: "refused" });
    expect(parseCommandLine(["doctor", "gpu-1"], root)).toMatchObject({
      kind: "refused",
      message: "modelswap doctor: unexpected argument 'gpu-1'",
    });
    const top = parseCommandLine(["--help"], root);
    if (top.kind === "help") expect(top.usage).toMatch(/\n {2}doctor +check every host\n/);
  });

  it("help wins over everything else on the line; help <command> is <command> --help", () => {
    const root = withDoctor();
    expect(parseCommandLine(["worker", "--version", "--help"], root)).toMatchObject({ kind: "help" });
    expect(parseCommandLine(["help", "doctor"], root)).toEqual(parseCommandLine(["doctor", "--help"], root));
  });
});
