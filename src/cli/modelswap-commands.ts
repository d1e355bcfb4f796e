import type { CliCommand } from "./cli-command.ts";
import { opsCommands } from "./ops-commands.ts";

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
          // The demo is part of the test bench (testbench/demo.ts: simulated hosts, dev dependencies): it
          // runs from a checkout's sources only. The build has no bench, and tsc does not follow an import
          // whose path is not a literal.
          if (import.meta.url.endsWith(".js")) {
            process.stderr.write(
              "modelswap demo runs from a checkout's sources, with the bench and the dev dependencies: npm run demo\n" +
                "this build (and the Docker image) holds the bot alone; the README's 'The modelswap command' says how to run the demo in a throwaway container\n",
            );
            return 1;
          }
          const demo: string = "../../testbench/demo.ts";
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
            checkSlack: (await import("../slack/check-slack.ts")).checkSlack,
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
              "and lists every problem with its fix; exits 1 when there is one. Starts nothing, connects nowhere.\n" +
              "With --role bot, as for a process that runs the bot role alone: it needs no SSH key.",
            options: {
              role: {
                type: "string",
                valueName: "bot|worker|start",
                description: "check for the process's role (default start: both; bot alone needs no SSH key)",
              },
            },
            run: async ({ positionals, values }) => {
              const role = values.role === undefined ? "start" : String(values.role);
              if (role !== "bot" && role !== "worker" && role !== "start") {
                process.stderr.write(
                  `modelswap config check: --role is bot, worker or start (the command that runs the process), not '${role}'\n`,
                );
                return 2;
              }
              return await (await import("./config-check.ts")).configCheck(positionals[0], env, role);
            },
          },
        ],
      },
      {
        name: "recipes",
        args: "[model]",
        maxPositionals: 1,
        summary: "list the recipe catalogue, or explain which recipes a model gets and why",
        description:
          "Without a model: every recipe (src/plan/catalogue.yaml, then the config's recipes.own) with what it\n" +
          "matches and sets, and where each weight format runs. With a model (org/name, a Hub URL, or a local\n" +
          "directory holding its config.json and hf_quant_config.json): its architecture and quantization as\n" +
          "modelswap reads them, and for each engine and GPU whether the format runs there, which recipes apply\n" +
          "and why the others do not, and the flags they give. Reads the Hub through HF_ENDPOINT (HF_TOKEN for\n" +
          "gated models); starts nothing, asks no host.",
        options: {
          gpu: {
            type: "string",
            multiple: true,
            valueName: "cc",
            description:
              "a compute capability to explain for, e.g. 12.0 or sm_120 (again for more; default: sm_80, sm_90, sm_100, sm_120)",
          },
          engine: {
            type: "string",
            valueName: "sglang|vllm",
            description: "only this engine (default: both)",
          },
          config: {
            type: "string",
            valueName: "file",
            description:
              "a config file whose recipes.own count too (default: MODELSWAP_CONFIG when it exists)",
          },
        },
        run: async ({ values, positionals }) => {
          const engine = values.engine === undefined ? undefined : String(values.engine);
          const { ENGINE_KINDS } = await import("../engine/engine-kind.ts");
          const kind = ENGINE_KINDS.find((k) => k === engine);
          if (engine !== undefined && kind === undefined) {
            process.stderr.write(`modelswap recipes: --engine takes sglang or vllm, not '${engine}'\n`);
            return 2;
          }
          return await (await import("./recipes-command.ts")).recipesCommand({
            ...(positionals[0] === undefined ? {} : { model: positionals[0] }),
            gpus: Array.isArray(values.gpu) ? values.gpu.map(String) : [],
            engines: kind === undefined ? [...ENGINE_KINDS] : [kind],
            ...(values.config === undefined ? {} : { configPath: String(values.config) }),
            env,
            out: process.stdout,
            err: process.stderr,
          });
        },
      },
      // status, history, audit, show, swap, cancel, rollback, approve, reject: as an operator, through the API
      ...opsCommands(env),
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
