import type { HostConfig } from "../config/file-schema.ts";
import { type HostEngine, hostEngines } from "../config/host-engines.ts";
import { lsRemoteCommand, parseLsRemote } from "../engine/engine-source.ts";
import { privilegedCommands } from "../engine/unit-commands.ts";
import { asCodedError, CodedError } from "../errors.ts";
import { readFrontDoor } from "../front-door/front-door-check.ts";
import { hostFrontDoor } from "../front-door/host-front-door.ts";
import { readGpus } from "../gpu/nvidia-smi.ts";
import { createTransport } from "../host/create-transport.ts";
import { lines, sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import type { Logger } from "../log.ts";
import { formatGiB } from "../plan/byte-units.ts";
import { describeGpus, hubCliCheck, venvCheck } from "../plan/make-plan.ts";
import { readFreeDiskBytes, readHubCli, readVenvPython } from "../plan/read-host-facts.ts";
import { withTimeout } from "../with-timeout.ts";
import { type DoctorRow, pass, problem } from "./doctor-row.ts";

/** Below this much free space in the models directory the doctor fails: hardly a model fits. */
export const MODELS_DIR_FAIL_BYTES = 10 * 2 ** 30;
/** Below this much it warns: a large model (a 4-bit 400B MoE is 200–230 GB) would not fit. */
export const MODELS_DIR_WARN_BYTES = 100 * 2 ** 30;
/** docs/operations.md, "What a host needs": the `hf` command of huggingface_hub 1.x. */
export const MIN_HF_MAJOR = 1;

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

interface Check {
  check: string;
  run: () => Promise<DoctorRow>;
}

async function connectRow(
  transport: HostTransport,
  host: HostConfig,
  target: string,
): Promise<{ status: "pass"; row: DoctorRow; user: string } | (DoctorRow & { status: "fail" })> {
  const ssh = host.ssh;
  try {
    const result = await transport.exec(sh`id -un`);
    const user = result.stdout.trim();
    const saw =
      ssh === undefined
        ? `local: commands run on this machine as ${user}`
        : `${ssh.user}@${ssh.address}:${ssh.port}: host key ${ssh.hostKeySha256} matches the pin; logged in as ${user}`;
    return { status: "pass", row: pass(target, "ssh", saw), user };
  } catch (error) {
    const coded = asCodedError(error);
    const fix =
      coded.code === "HOST_KEY_MISMATCH" && ssh !== undefined
        ? `see what the host offers with \`ssh-keyscan -t ed25519 -p ${ssh.port} ${ssh.address} | ssh-keygen -lf -\` and compare it on the host itself (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub); if the host was reinstalled and you trust it, set hosts[${host.name}].ssh.hostKeySha256 to it, otherwise treat it as an incident`
        : coded.fix;
    return { ...problem("fail", target, "ssh", coded.message, coded.code, fix), status: "fail" };
  }
}

function sudoRow(transport: HostTransport, host: HostConfig, target: string, user: string): Check {
  return {
    check: "sudo",
    run: async () => {
      if (!host.sudo) {
        if (user === "root") return pass(target, "sudo", "sudo: false, and the bot logs in as root");
        return problem(
          "fail",
          target,
          "sudo",
          `sudo: false, but ${user} is not root: writing units and systemctl enable/disable would be refused`,
          "HOST_SUDO_DENIED",
          `set sudo: true for ${host.name} and install the sudoers rules of docs/operations.md ("sudo: exactly the rights it needs")`,
        );
      }
      const listing = await transport.exec(sh`sudo -n -l`);
      if (listing.code !== 0) {
        const said = lastLine(listing.stderr || listing.stdout) || `exit ${listing.code}`;
        return problem(
          "fail",
          target,
          "sudo",
          `sudo -n -l: ${said}`,
          "HOST_SUDO_DENIED",
          `install the sudoers rules of docs/operations.md ("sudo: exactly the rights it needs") as /etc/sudoers.d/modelswap for ${user}, with NOPASSWD`,
        );
      }
      // `sudo -l <command>`: sudo itself decides whether the rules allow that exact command line (exit 0)
      // or not (exit 1), as sudo(8) documents for -l with a command; nothing runs
      const commands = privilegedCommands({ ...host, engines: hostEngines(host).map((e) => e.kind) });
      const asked = await transport.exec(
        lines([
          ...commands.map(
            ({ command }, i) =>
              sh`{ sudo -n -l ${command} > /dev/null 2>&1 && echo ${i}:yes || echo ${i}:no; } &`,
          ),
          sh`wait`,
        ]),
      );
      const refused = commands.filter((_, i) => !asked.stdout.includes(`${i}:yes`)).map((c) => c.what);
      if (refused.length === 0)
        return pass(
          target,
          "sudo",
          `sudo -n allows all ${commands.length} commands the switch and rollback run`,
        );
      return problem(
        "fail",
        target,
        "sudo",
        `sudo -n does not allow ${refused.join("; ")}`,
        "HOST_SUDO_DENIED",
        `add the rules of docs/operations.md ("sudo: exactly the rights it needs") for unitDir ${host.unitDir} and currentUnit ${host.currentUnit} to /etc/sudoers.d/modelswap`,
      );
    },
  };
}

function hfRow(transport: HostTransport, target: string): Check {
  return {
    check: "hf",
    run: async () => {
      const cli = await readHubCli(transport);
      const check = hubCliCheck({ hubCli: cli });
      if (!check.ok) return problem("fail", target, "hf", check.detail, "HOST_HF_MISSING", check.fix ?? "");
      const result = await transport.exec(sh`hf --version 2>&1`);
      const version = /(\d+)\.(\d+)\.(\d+)/.exec(result.stdout);
      if (result.code !== 0 || version === null) {
        return problem(
          "fail",
          target,
          "hf",
          `hf --version failed (exit ${result.code}): ${lastLine(result.stdout)}`,
          "HOST_HF_MISSING",
          check.fix ?? "",
        );
      }
      if (Number(version[1]) < MIN_HF_MAJOR) {
        return problem(
          "fail",
          target,
          "hf",
          `hf ${version[0]}: modelswap needs huggingface_hub ${MIN_HF_MAJOR}.x or newer`,
          "HOST_HF_TOO_OLD",
          "pip install -U huggingface_hub where hf comes from (its own venv, e.g. /opt/hf/bin/pip), see docs/operations.md",
        );
      }
      return pass(target, "hf", `hf ${version[0]}`);
    },
  };
}

/** The row's name: "venv" for the host's engine, "venv (vllm)" for another it has. */
const rowOf = (what: string, engine: HostEngine, other: boolean): string =>
  other ? `${what} (${engine.kind})` : what;

function venvRow(transport: HostTransport, engine: HostEngine, target: string, other: boolean): Check {
  const row = rowOf("venv", engine, other);
  return {
    check: row,
    run: async () => {
      const python = await readVenvPython(transport, engine.venv);
      const check = venvCheck({ venvOk: python.ok }, engine.venv);
      if (!check.ok) {
        const said = python.said === "" ? "" : `: ${python.said}`;
        return problem("fail", target, row, `${check.detail}${said}`, "HOST_VENV_BROKEN", check.fix ?? "");
      }
      return pass(target, row, `${engine.venv}/bin/python runs: ${python.version}`);
    },
  };
}

function upstreamRow(
  transport: HostTransport,
  host: HostConfig,
  engine: HostEngine,
  target: string,
  timeoutMs: number,
  other: boolean,
): Check {
  const row = rowOf("engine upstream", engine, other);
  return {
    check: row,
    run: async () => {
      const { upstream } = engine;
      const result = await transport.exec(lsRemoteCommand(upstream, "main"), { timeoutMs });
      if (result.code !== 0) {
        return problem(
          "fail",
          target,
          row,
          `git ls-remote ${upstream} failed on the host (exit ${result.code}): ${gitError(result.stderr || result.stdout)}`,
          "ENGINE_UPSTREAM_UNREACHABLE",
          `check hosts[${host.name}].${engine.kind === host.engine ? "engineUpstream" : `engines.${engine.kind}.upstream`} and that the host reaches it (run git ls-remote there): every swap fetches its engine from it`,
        );
      }
      const refs = parseLsRemote(result.stdout);
      const main = refs.get("refs/heads/main");
      return pass(
        target,
        row,
        `${upstream}: ${refs.size} branches and tags${main === undefined ? "" : `, main at ${main.slice(0, 7)}`}`,
      );
    },
  };
}

function modelsDirRow(transport: HostTransport, host: HostConfig, target: string, user: string): Check {
  const dir = host.modelsDir;
  return {
    check: "models dir",
    run: async () => {
      // an empty directory made and removed again: what the bot's user may really write (permissions,
      // a read-only mount, an immutable directory), not what the mode bits say
      const probe = await transport.exec(sh`
          if [ ! -d ${dir} ]; then echo missing; exit 0; fi
          t=$(mktemp -d ${`${dir}/.modelswap-doctor.XXXXXX`} 2>&1) || { echo "refused $t"; exit 0; }
          rmdir "$t"; echo writable`);
      const said = probe.stdout.trim();
      if (said === "missing") {
        return problem(
          "fail",
          target,
          "models dir",
          `${dir} does not exist`,
          "MODELS_DIR_MISSING",
          `create it for the bot's user: sudo install -d -o ${user} -g ${user} ${dir} (or correct hosts[${host.name}].modelsDir)`,
        );
      }
      if (said !== "writable") {
        return problem(
          "fail",
          target,
          "models dir",
          `${user} cannot write in ${dir}: ${said.replace(/^refused /, "")}`,
          "MODELS_DIR_NOT_WRITABLE",
          `give it to the bot's user (sudo chown ${user}: ${dir}); downloads, tasks and engine builds all go there`,
        );
      }
      const free = await readFreeDiskBytes(transport, dir);
      const saw = `${dir}: writable by ${user}, ${formatGiB(free)} free`;
      if (free < MODELS_DIR_WARN_BYTES) {
        return problem(
          free < MODELS_DIR_FAIL_BYTES ? "fail" : "warn",
          target,
          "models dir",
          saw,
          "MODELS_DIR_LOW_SPACE",
          "free space there: old models are kept for rollbacks, remove the ones you will not go back to (a plan refuses a model that does not fit)",
        );
      }
      return pass(target, "models dir", saw);
    },
  };
}

function gpuRow(transport: HostTransport, target: string): Check {
  return {
    check: "gpus",
    run: async () => {
      try {
        const gpus = await readGpus(transport);
        if (gpus.length === 0)
          return problem(
            "fail",
            target,
            "gpus",
            "nvidia-smi lists no GPUs",
            "GPU_UNAVAILABLE",
            "check the driver on the host (nvidia-smi by hand, dmesg)",
          );
        return pass(target, "gpus", `${describeGpus({ gpus })}, driver ${gpus[0]?.driverVersion ?? "?"}`);
      } catch (error) {
        const coded = asCodedError(error);
        if (coded.code !== "HOST_COMMAND_FAILED") throw error;
        return problem("fail", target, "gpus", coded.message, "GPU_UNAVAILABLE", coded.fix);
      }
    },
  };
}

/**
 * The front door, when the host has one: the socket answers at level admin, both slots are there as the
 * plan needs them (the plan's own check), and nothing listens on the hold's port — something that did
 * would be sent the held requests (docs/front-door.md). The port is tried from the host with bash's
 * /dev/tcp: "refused" is what the hold needs.
 */
function frontDoorRow(transport: HostTransport, host: HostConfig, target: string): Check {
  return {
    check: "front door",
    run: async () => {
      const fd = hostFrontDoor(host, transport)!;
      const read = await readFrontDoor(fd);
      if (!read.ok) return problem("fail", target, "front door", read.detail, read.code, read.fix);
      const probe = await transport.exec(
        sh`timeout 3 bash -c ${`exec 3<>/dev/tcp/127.0.0.1/${read.holdPort}`} 2>/dev/null && echo open || echo closed`,
      );
      if (probe.stdout.trim() === "open")
        return problem(
          "fail",
          target,
          "front door",
          `something listens on port ${read.holdPort}, where slot ${fd.hold} points: held requests would be sent to it`,
          "FRONT_DOOR_MISCONFIGURED",
          `point ${fd.hold} at a port nothing listens on (127.0.0.1:1 in docs/front-door.md), or stop what listens (ss -ltnp 'sport = :${read.holdPort}')`,
        );
      return pass(target, "front door", `${read.detail}; port ${read.holdPort} refuses, so the hold holds`);
    },
  };
}

/** Rejects with HOST_COMMAND_TIMEOUT when `work` outlives `ms` by 2 s: a backstop, the transport's own limits come first. */
function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return withTimeout(
    work,
    ms + 2000,
    () =>
      new CodedError(
        "HOST_COMMAND_TIMEOUT",
        `no answer within ${Math.round(ms / 1000)} s`,
        "the host may be overloaded or a tool on it hangs (nvidia-smi does when the driver is stuck); look at the host directly",
      ),
  );
}

/** git's own reason (its first `fatal:` or `error:` line; the lines after it are advice). */
function gitError(text: string): string {
  return (
    text
      .split("\n")
      .find((l) => /^(fatal|error):/.test(l.trim()))
      ?.trim() ?? lastLine(text)
  );
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1)?.trim() ?? "";
}
