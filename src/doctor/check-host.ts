import type { HostConfig } from "../config/file-schema.ts";
import { hostEngines } from "../config/host-engines.ts";
import { asCodedError } from "../errors.ts";
import { createTransport } from "../host/create-transport.ts";
import type { Logger } from "../log.ts";
import { connectRow, sudoRow } from "./access-rows.ts";
import { type DoctorRow, problem } from "./doctor-row.ts";
import { hfRow, upstreamRow, venvRow } from "./engine-rows.ts";
import { within } from "./host-check.ts";
import { fenceRow, frontDoorRow, gpuRow, modelsDirRow, type ServingNow, servingRow } from "./serving-rows.ts";

/**
 * `modelswap doctor`'s rows for one host: the SSH handshake and login (the host key against the pin),
 * then, at once and each bounded by `timeoutMs`: sudo against the privileged commands the switch and
 * the rollback run, `hf --version`, the venv's python, the engine upstream (`git ls-remote`, as the
 * preflight asks it), the models directory (there, writable, free space) and nvidia-smi. Reads only:
 * the one thing written is an empty directory in the models directory, removed at once.
 */
export async function checkHost(
  host: HostConfig,
  configIndex: number,
  log: Logger,
  timeoutMs: number,
  /** What serves there as the last swap left it (the ledger in Redis); absent: the config's currentUnit. */
  serving?: ServingNow,
): Promise<DoctorRow[]> {
  const target = `host ${host.name}`;
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  // each command gets the doctor's limit; the handshake the host's own (what the bot waits), at most that
  const bounded: HostConfig = {
    ...host,
    commandTimeoutSeconds: seconds,
    ...(host.ssh === undefined
      ? {}
      : { ssh: { ...host.ssh, connectTimeoutSeconds: Math.min(host.ssh.connectTimeoutSeconds, seconds) } }),
  };
  const transport = createTransport(bounded, log, configIndex);
  try {
    const login = await within(timeoutMs, connectRow(transport, host, target)).catch((error: unknown) => {
      const coded = asCodedError(error);
      return {
        ...problem("fail", target, "ssh", coded.message, "HOST_UNREACHABLE", coded.fix),
        status: "fail" as const,
      };
    });
    if (login.status === "fail") return [login];
    const user = login.user;
    const checks = [
      sudoRow(transport, host, target, user),
      hfRow(transport, target),
      // the host's own engine's rows by their plain names; another engine's say which
      ...hostEngines(host).flatMap((engine, i) => [
        venvRow(transport, engine, target, i > 0),
        upstreamRow(transport, host, engine, target, timeoutMs, i > 0),
      ]),
      modelsDirRow(transport, host, target, user),
      servingRow(transport, host, target, serving),
      fenceRow(transport, host, target),
      gpuRow(transport, target),
      ...(host.frontDoor === undefined ? [] : [frontDoorRow(transport, host, target)]),
    ];
    const rows = await Promise.all(
      checks.map(async ({ check, run }) => {
        try {
          return await within(timeoutMs, run());
        } catch (error) {
          const coded = asCodedError(error);
          return problem("fail", target, check, coded.message, coded.code, coded.fix);
        }
      }),
    );
    return [login.row, ...rows];
  } finally {
    await transport.close();
  }
}
