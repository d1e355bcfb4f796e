import type { HostConfig } from "../config/file-schema.ts";
import { CodedError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { createTransport } from "./create-transport.ts";
import { KeptShell } from "./kept-shell.ts";
import type { HostTransport } from "./transport.ts";

/** The configured hosts and one transport each, opened on first use and reused after. */
export class HostRegistry {
  private readonly transports = new Map<string, HostTransport>();
  private readonly shells = new Map<string, KeptShell>();
  private readonly byName: Map<string, HostConfig>;

  constructor(
    hosts: readonly HostConfig[],
    private readonly log: Logger,
  ) {
    this.byName = new Map(hosts.map((h) => [h.name, h]));
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  config(name: string): HostConfig {
    const host = this.byName.get(name);
    if (host === undefined) {
      throw new CodedError(
        "HOST_UNKNOWN",
        `no host named ${name} is configured`,
        `use one of: ${this.names().join(", ")}, or add it under hosts: in the config and restart`,
      );
    }
    return host;
  }

  transport(name: string): HostTransport {
    const host = this.config(name);
    let transport = this.transports.get(name);
    if (transport === undefined) {
      transport = createTransport(host, this.log, this.names().indexOf(name));
      this.transports.set(name, transport);
    }
    return transport;
  }

  /** The host's kept shell (kept-shell.ts) on its transport: for the health monitor's frequent checks. */
  keptShell(name: string): KeptShell {
    let shell = this.shells.get(name);
    if (shell === undefined) {
      shell = new KeptShell(this.transport(name), this.config(name).commandTimeoutSeconds * 1000);
      this.shells.set(name, shell);
    }
    return shell;
  }

  async closeAll(): Promise<void> {
    const shells = [...this.shells.values()];
    this.shells.clear();
    await Promise.allSettled(shells.map((s) => s.close()));
    const all = [...this.transports.values()];
    this.transports.clear();
    await Promise.allSettled(all.map((t) => t.close()));
  }
}
