/** One problem of the environment or the config file, as `modelswap config check` lists it. */
export interface ConfigProblem {
  /** `env` for environment variables, else the config file. */
  source: "env" | "file";
  /** Dotted path of the setting, e.g. `hosts[0].ssh.hostKeySha256`. */
  path: string;
  /** What is wrong, and what is accepted. */
  what: string;
  /** What was given, shown short and safely (a secret-looking value never is); absent when nothing was. */
  given?: string;
  /** How to fix it, with an example. */
  fix: string;
}
