import type { Config } from "./load-config.ts";

/**
 * The config as it is now. A reload (src/reload/) may replace it while the process runs, so a part that
 * must follow it asks here where it uses a setting — once per command, swap step or health check — and
 * keeps no copy.
 */
export interface ConfigSource {
  current(): Config;
}

/**
 * The one holder of a process's config: built from the config read at start, replaced as a whole by a
 * reload that passed validation. Nothing else holds a config that changes.
 */
export class LiveConfig implements ConfigSource {
  private config: Config;

  constructor(initial: Config) {
    this.config = initial;
  }

  current(): Config {
    return this.config;
  }

  replace(next: Config): void {
    this.config = next;
  }
}
