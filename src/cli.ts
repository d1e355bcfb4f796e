import { modelswapCommands } from "./cli/modelswap-commands.ts";
import { packageVersion } from "./cli/package-version.ts";
import { parseCommandLine } from "./cli/parse-command-line.ts";
import { describeError } from "./errors.ts";

/** The `modelswap` command line (src/cli/modelswap-commands.ts lists the commands). */
async function main(argv: string[]): Promise<number> {
  const line = parseCommandLine(argv, modelswapCommands(process.env));
  switch (line.kind) {
    case "help":
      process.stdout.write(`${line.usage}\n`);
      return 0;
    case "version":
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case "refused":
      process.stderr.write(`${line.message}\n\n${line.usage}\n`);
      return 2;
    case "run":
      return await line.command.run!(line.input);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`modelswap: ${describeError(error)}\n`);
    // A start that failed half-way (Slack refused the app token, PORT taken) may have left Redis
    // connections and workers running: exit, so a supervisor sees the failure instead of a live process.
    process.exit(1);
  },
);
