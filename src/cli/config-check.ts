import { benchWarnings } from "../config/file-schema.ts";
import { formatProblems, readConfig } from "../config/load-config.ts";

/**
 * `modelswap config check [file] [--role bot|worker|start]`: lists every problem of the environment and the
 * config file, for the role the process will run (a bot alone needs no SSH key); starts nothing.
 */
export async function configCheck(
  path: string | undefined,
  env: NodeJS.ProcessEnv,
  role: "bot" | "worker" | "start" = "start",
): Promise<number> {
  const { config, problems } = await readConfig(env, path, { hostKeys: role !== "bot" });
  if (config === undefined) {
    process.stdout.write(`✗ ${problems.length} problem(s) found:\n${formatProblems(problems)}\n`);
    return 1;
  }
  const hosts = config.file.hosts.map(
    (h) => `${h.name} (${h.ssh ? `ssh ${h.ssh.user}@${h.ssh.address}:${h.ssh.port}` : "local"})`,
  );
  process.stdout.write(`✓ ${config.path} is valid: ${hosts.length} host(s): ${hosts.join(", ")}\n`);
  for (const warning of benchWarnings(config.file.bench)) process.stdout.write(`⚠ ${warning}\n`);
  return 0;
}
