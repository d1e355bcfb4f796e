import type { HostConfig } from "../config/file-schema.ts";
import type { Logger } from "../log.ts";
import { LocalTransport } from "./local-transport.ts";
import { SshTransport } from "./ssh-transport.ts";
import type { HostTransport } from "./transport.ts";

/** The transport a host's config asks for: SSH, or bash on this machine for `local: true`. */
export function createTransport(host: HostConfig, log: Logger, configIndex?: number): HostTransport {
  const commandTimeoutMs = host.commandTimeoutSeconds * 1000;
  if (host.ssh !== undefined) {
    return new SshTransport({
      hostName: host.name,
      ssh: host.ssh,
      commandTimeoutMs,
      extraPath: host.extraPath,
      log: log.child({ host: host.name }),
      ...(configIndex === undefined ? {} : { configIndex }),
    });
  }
  return new LocalTransport({ hostName: host.name, commandTimeoutMs, extraPath: host.extraPath });
}
