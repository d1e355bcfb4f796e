import { describe, expect, it } from "vitest";
import type { CliCommand } from "../../src/cli/cli-command.ts";
import { modelswapCommands } from "../../src/cli/modelswap-commands.ts";
import { parseCommandLine } from "../../src/cli/parse-command-line.ts";

/** The real tree with one more command, as a new sub-command would be added: with an option of its own. */
function withProbe(): CliCommand {
  const root = modelswapCommands({});
  const probe: CliCommand = {
    name: "probe",
    summary: "check every host",
    options: { host: { type: "string", valueName: "host", description: "only this host" } },
    run: async () => 0,
  };
  return { ...root, commands: [...(root.commands ?? []), probe] };
}

describe("parseCommandLine", () => {
  it("runs the default command on an empty line, and names the command's path", () => {
    expect(parseCommandLine([], withProbe())).toMatchObject({ kind: "run", path: ["modelswap", "start"] });
    expect(parseCommandLine(["config", "check", "x.yaml"], withProbe())).toMatchObject({
      kind: "run",
      path: ["modelswap", "config", "check"],
      input: { positionals: ["x.yaml"] },
    });
  });

  it("gives a new command --help, --version, its options (--opt value and --opt=value) and refusals", () => {
    const root = withProbe();
    const help = parseCommandLine(["probe", "--help"], root);
    expect(help).toMatchObject({ kind: "help" });
    if (help.kind === "help") expect(help.usage).toContain("--host <host>   only this host");
    expect(parseCommandLine(["probe", "--version"], root)).toEqual({ kind: "version" });
    for (const args of [
      ["probe", "--host", "gpu-1"],
      ["probe", "--host=gpu-1"],
    ]) {
      expect(parseCommandLine(args, root)).toMatchObject({
        kind: "run",
        input: { values: { host: "gpu-1" } },
      });
    }
    expect(parseCommandLine(["probe", "--host"], root)).toMatchObject({ kind: "refused" });
    expect(parseCommandLine(["probe", "gpu-1"], root)).toMatchObject({
      kind: "refused",
      message: "modelswap probe: unexpected argument 'gpu-1'",
    });
    const top = parseCommandLine(["--help"], root);
    if (top.kind === "help") expect(top.usage).toMatch(/\n {2}probe +check every host\n/);
  });

  it("help wins over everything else on the line; help <command> is <command> --help", () => {
    const root = withProbe();
    expect(parseCommandLine(["worker", "--version", "--help"], root)).toMatchObject({ kind: "help" });
    expect(parseCommandLine(["help", "probe"], root)).toEqual(parseCommandLine(["probe", "--help"], root));
  });

  it("a repeatable option (modelswap doctor --host) gives every value, in order", () => {
    const root = modelswapCommands({});
    expect(parseCommandLine(["doctor", "--host", "gpu-1", "--host=gpu-2", "--json"], root)).toMatchObject({
      kind: "run",
      path: ["modelswap", "doctor"],
      input: { values: { host: ["gpu-1", "gpu-2"], json: true } },
    });
    const help = parseCommandLine(["doctor", "--help"], root);
    if (help.kind === "help") expect(help.usage).toContain("--host <name>…");
  });

  it("suggests the option or command a near miss meant", () => {
    const root = withProbe();
    expect(parseCommandLine(["probe", "--hots", "gpu-1"], root)).toMatchObject({
      kind: "refused",
      message: "modelswap probe: unknown option '--hots': did you mean '--host'?",
    });
    expect(parseCommandLine(["prob"], root)).toMatchObject({
      kind: "refused",
      message: "modelswap: unknown command 'prob': did you mean 'probe'?",
    });
    // nothing close: no guess
    expect(parseCommandLine(["probe", "--zzzzzz"], root)).toMatchObject({
      kind: "refused",
      message: "modelswap probe: unknown option '--zzzzzz'",
    });
  });
});
