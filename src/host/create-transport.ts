import type { Logger } from "../log.ts";
import { LocalTransport } from "./local-transport.ts";
import type { SshConfig } from "./ssh-schema.ts";
import { SshTransport } from "./ssh-transport.ts";
import type { HostTransport } from "./transport.ts";

/**
 * What a transport needs of a host's config entry (config/host-schema.ts holds the whole entry): the
 * host layer reads no more of the config than this.
 */
export interface HostConnection {
  name: string;
  /** Absent for `local: true`: bash on this machine. */
  ssh?: SshConfig | undefined;
  commandTimeoutSeconds: number;
  extraPath: readonly string[];
}

/** The transport a host's config asks for: SSH, or bash on this machine for `local: true`. */
export function createTransport(host: HostConnection, log: Logger, configIndex?: number): HostTransport {
  const commandTimeoutMs = host.commandTimeoutSeconds * 1000;
  if (host.ssh !== undefined) {
    return new SshTransport({
      hostName: host.name,
      ssh: host.ssh,
      commandTimeoutMs,
      extraPath: host.extraPath,
      log,
      ...(configIndex === undefined ? {} : { configIndex }),
    });
  }
  return new LocalTransport({ hostName: host.name, commandTimeoutMs, extraPath: host.extraPath });
}
