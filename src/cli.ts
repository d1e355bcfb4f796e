import { formatProblems, loadConfig, readConfig } from "./config/load-config.ts";
import { describeError } from "./errors.ts";
import { type Roles, startModelswap } from "./main.ts";

const USAGE = `Usage: modelswap [command]

Commands:
  start                 run the Slack bot and the worker in one process (default)
  bot                   run only the Slack side (acks and enqueues)
  worker                run only the worker (talks to hosts, posts results)
  demo                  play a conversation against the simulated Slack, Hub and GPU hosts
  config check [file]   validate the environment and the config file, list every problem
  help                  show this help

Environment: SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, REDIS_URL (or REDIS_SENTINELS),
MODELSWAP_CONFIG, …
(README.md lists them all).`;

async function main(argv: string[]): Promise<number> {
  const [command = "start", ...rest] = argv;
  switch (command) {
    case "start":
      return await run({ bot: true, worker: true });
    case "bot":
      return await run({ bot: true, worker: false });
    case "worker":
      return await run({ bot: false, worker: true });
    case "demo": {
      const { runDemo } = await import("./demo/run-demo.ts");
      return await runDemo();
    }
    case "config":
      if (rest[0] === "check") return await configCheck(rest[1]);
      process.stderr.write(`Unknown config command. ${USAGE}\n`);
      return 2;
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(`${USAGE}\n`);
      return 0;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}\n`);
      return 2;
  }
}

async function configCheck(path: string | undefined): Promise<number> {
  const { config, problems } = await readConfig(process.env, path);
  if (config === undefined) {
    process.stdout.write(`✗ ${problems.length} problem(s) found:\n${formatProblems(problems)}\n`);
    return 1;
  }
  const hosts = config.file.hosts.map(
    (h) => `${h.name} (${h.ssh ? `ssh ${h.ssh.user}@${h.ssh.address}:${h.ssh.port}` : "local"})`,
  );
  process.stdout.write(`✓ ${config.path} is valid: ${hosts.length} host(s): ${hosts.join(", ")}\n`);
  return 0;
}

async function run(roles: Roles): Promise<number> {
  const config = await loadConfig(process.env);
  const running = await startModelswap({ config, roles });
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      running.log.info({ signal }, "signal received");
      // A second signal means "now": detached work on the hosts is unaffected either way.
      const now = () => {
        running.log.warn("second signal: exiting at once");
        process.exit(130);
      };
      process.once("SIGTERM", now);
      process.once("SIGINT", now);
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  await running.stop();
  // A step cut off at the end of the grace period may still hold timers: the process ends here, once the
  // log is written out.
  await new Promise<void>((resolve) => running.log.flush(() => resolve()));
  process.exit(0);
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
