import type { CliCommand } from "./cli-command.ts";

const ENVIRONMENT =
  "It reads the environment (SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, REDIS_URL or\n" +
  "REDIS_SENTINELS, MODELSWAP_CONFIG, …; README.md lists them all) and the config file; check both first\n" +
  "with `modelswap config check`. It runs until SIGTERM or SIGINT (a second one exits at once).";

/**
 * The `modelswap` command tree. What a command runs is imported only when it runs, so `--help`,
 * `--version` and a refused command line answer at once and start nothing.
 */
export function modelswapCommands(env: NodeJS.ProcessEnv): CliCommand {
  const roles = async (bot: boolean, worker: boolean) =>
    await (await import("./run-roles.ts")).runRoles({ bot, worker }, env);
  return {
    name: "modelswap",
    summary: "the modelswap Slack bot",
    description:
      "A Slack ChatOps bot that swaps the LLM a GPU host serves. `modelswap <command> --help` tells more.\n" +
      "Environment: SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES),\n" +
      "MODELSWAP_CONFIG, … (README.md lists them all).",
    defaultCommand: "start",
    commands: [
      {
        name: "start",
        summary: "run the Slack bot and the worker in one process",
        description: `Runs the Slack bot and the worker in one process: the simple setup.\n${ENVIRONMENT}`,
        run: async () => await roles(true, true),
      },
      {
        name: "bot",
        summary: "run only the Slack side (acks and enqueues)",
        description: `Runs only the Slack side: verify, authorize, acknowledge, enqueue. Talks to Slack and Redis.\n${ENVIRONMENT}`,
        run: async () => await roles(true, false),
      },
      {
        name: "worker",
        summary: "run only the worker (talks to hosts, posts results)",
        description:
          "Runs only the worker: swaps, status and history, the health monitor. Talks to Redis, Slack's Web\n" +
          `API, the Hub and every GPU host; several may run on several machines against one Redis.\n${ENVIRONMENT}`,
        run: async () => await roles(false, true),
      },
      {
        name: "demo",
        summary: "play a conversation against the simulated Slack, Hub and GPU hosts",
        description:
          "Plays a conversation with the real bot against a simulated Slack workspace, Hub and GPU hosts\n" +
          "(its own redis-server and sshd on free loopback ports), then prints the channel. About 40 s.",
        run: async () => {
          // The demo runs on the testbench (simulated hosts, dev dependencies): from the sources only.
          // The build leaves it out, and tsc does not follow an import whose path is not a literal.
          if (import.meta.url.endsWith(".js")) {
            process.stderr.write(
              "modelswap demo runs from a checkout's sources, with the bench and the dev dependencies: npm run demo\n" +
                "this build (and the Docker image) holds the bot alone; the README's 'The modelswap command' says how to run the demo in a throwaway container\n",
            );
            return 1;
          }
          const demo: string = "../demo/run-demo.ts";
          const { runDemo } = (await import(demo)) as { runDemo: () => Promise<number> };
          return await runDemo();
        },
      },
      {
        name: "doctor",
        summary: "check Slack, Redis and every host the config names; says what is wrong and the fix",
        description:
          "Connects to everything a deployment needs and checks it: Slack (the bot token, its scopes against\n" +
          "manifest.yml, the app-level token, the channel), Redis (PING, noeviction, AOF) and each host (the SSH\n" +
          "host key against its pin, the login, sudo, hf, the venv, the engine upstream, the models directory,\n" +
          "nvidia-smi). Prints a table, one row per check; exits 1 when a check fails (warnings allowed), 0\n" +
          "otherwise. Reads the environment and the config file as `modelswap start` does; starts nothing and\n" +
          'changes nothing (docs/operations.md, "modelswap doctor").',
        options: {
          host: {
            type: "string",
            multiple: true,
            valueName: "name",
            description: "check only this host (again for more); Slack and Redis are always checked",
          },
          json: { type: "boolean", description: "print the checks as JSON instead of the table" },
          timeout: {
            type: "string",
            valueName: "seconds",
            description: "limit for each check, the SSH handshake included (default 15, 1–300)",
          },
        },
        run: async ({ values }) => {
          const timeout = values.timeout === undefined ? 15 : Number(values.timeout);
          if (!Number.isInteger(timeout) || timeout < 1 || timeout > 300) {
            process.stderr.write(
              `modelswap doctor: --timeout must be a whole number of seconds from 1 to 300, not '${String(values.timeout)}'\n`,
            );
            return 2;
          }
          const hosts = Array.isArray(values.host) ? values.host.map(String) : [];
          return await (await import("../doctor/run-doctor.ts")).runDoctor({
            hosts,
            json: values.json === true,
            timeoutSeconds: timeout,
            env,
            out: process.stdout,
          });
        },
      },
      {
        name: "config",
        summary: "the config file and the environment",
        description: "The config file and the environment the bot and the worker read.",
        commands: [
          {
            name: "check",
            args: "[file]",
            maxPositionals: 1,
            summary: "validate the environment and the config file, list every problem",
            description:
              "Validates the environment and the config file (file, else MODELSWAP_CONFIG, else modelswap.yaml)\n" +
              "and lists every problem with its fix; exits 1 when there is one. Starts nothing, connects nowhere.",
            run: async ({ positionals }) =>
              await (await import("./config-check.ts")).configCheck(positionals[0], env),
          },
        ],
      },
      {
        name: "help",
        args: "[command]",
        maxPositionals: 2,
        summary: "show this help, or a command's",
        isHelp: true,
      },
    ],
  };
}
