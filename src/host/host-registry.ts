import type { HostConfig } from "../config/file-schema.ts";
import { CodedError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { createTransport } from "./create-transport.ts";
import type { HostTransport } from "./transport.ts";

/** The configured hosts and one transport each, opened on first use and reused after. */
export class HostRegistry {
  private readonly transports = new Map<string, HostTransport>();
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

  async closeAll(): Promise<void> {
    const all = [...this.transports.values()];
    this.transports.clear();
    await Promise.allSettled(all.map((t) => t.close()));
  }
}
