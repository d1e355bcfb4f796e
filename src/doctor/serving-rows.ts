import type { HostConfig } from "../config/file-schema.ts";
import { type HostEngine, hostEngineKind } from "../config/host-engines.ts";
import { probeCommandMs } from "../engine/engine.ts";
import { engineFor } from "../engine/engines.ts";
import { asCodedError } from "../errors.ts";
import { readFrontDoor } from "../front-door/front-door-check.ts";
import { hostFrontDoor } from "../front-door/host-front-door.ts";
import { readGpus } from "../gpu/nvidia-smi.ts";
import { fenceDir } from "../host/fence.ts";
import { sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import { formatGiB } from "../plan/byte-units.ts";
import { describeGpus } from "../plan/host-checks.ts";
import { readFreeDiskBytes } from "../plan/read-host-facts.ts";
import { pass, problem } from "./doctor-row.ts";
import type { Check } from "./host-check.ts";

/** How long the serving row's health probe may wait for an answer. */
const PROBE_SECONDS = 10;

/*
 * The doctor's rows of what a host holds: the models directory (there, writable, free space), what serves
 * now, the swap fence's directory, the GPUs and the front door.
 */

/** Below this much free space in the models directory the doctor fails: hardly a model fits. */
export const MODELS_DIR_FAIL_BYTES = 10 * 2 ** 30;
/** Below this much it warns: a large model (a 4-bit 400B MoE is 200–230 GB) would not fit. */
export const MODELS_DIR_WARN_BYTES = 100 * 2 ** 30;

export function modelsDirRow(
  transport: HostTransport,
  host: HostConfig,
  target: string,
  user: string,
): Check {
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

/** The unit that serves on a host and its port, as the ledger has them after a swap. */
export interface ServingNow {
  unit: string;
  port?: number | undefined;
  engine?: HostEngine["kind"] | undefined;
}

/**
 * What serves now, as a client would find it: the unit (the ledger's after a swap, else the config's
 * currentUnit) known to systemd and active, and its engine's health probe answered on its port. A host
 * with no such unit is a first swap's (a warning: nothing to stop); a unit that runs while nothing answers
 * on its port is a config that names the wrong port (a failure: the swap's health checks would look there).
 */
export function servingRow(
  transport: HostTransport,
  host: HostConfig,
  target: string,
  serving?: ServingNow,
): Check {
  const unit = serving?.unit ?? host.currentUnit;
  const port = serving?.port ?? host.servingPort;
  const engine = engineFor(serving?.engine ?? hostEngineKind(host));
  return {
    check: "serving",
    run: async () => {
      const probe = await transport.exec(
        sh`
          systemctl show -p LoadState -p ActiveState ${unit} 2>/dev/null || true
          echo ---health---
          ${engine.healthProbe(port, PROBE_SECONDS)} || true`,
        { timeoutMs: probeCommandMs(PROBE_SECONDS) },
      );
      const [show = "", health = ""] = probe.stdout.split("---health---\n");
      const props = new Map(
        show
          .split("\n")
          .filter((l) => l.includes("="))
          .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()] as const),
      );
      if (props.get("LoadState") !== "loaded")
        return problem(
          "warn",
          target,
          "serving",
          `no unit ${unit} on the host: a first swap starts its model without stopping one`,
          "SERVING_UNIT_MISSING",
          `if a model is served there, set hosts[${host.name}].currentUnit to its unit (systemctl list-units 'sglang*' 'vllm*')`,
        );
      const state = props.get("ActiveState") ?? "unknown";
      if (state !== "active")
        return problem(
          "warn",
          target,
          "serving",
          `${unit} is ${state}: nothing serves there now`,
          "SERVING_UNIT_INACTIVE",
          `start it (systemctl start ${unit}) and read its journal (journalctl -u ${unit}) if it fails; or let the next swap replace it`,
        );
      const status = health.trim().split("\n").at(-1) ?? "";
      if (status !== "200")
        return problem(
          "fail",
          target,
          "serving",
          `${unit} is active, but ${engine.healthLabel} on port ${port} answered ${status === "" || status === "000" ? "nothing" : `HTTP ${status}`}`,
          "SERVING_PORT_SILENT",
          `hosts[${host.name}].servingPort must be the port ${unit} listens on (its --port): a swap's checks and the monitor look there; else read its journal (journalctl -u ${unit})`,
        );
      return pass(target, "serving", `${unit} active; ${engine.healthLabel} answered 200 on port ${port}`);
    },
  };
}

/**
 * The fence every change of a swap runs under (src/host/fence.ts): `flock` must be on the host, and the
 * fence file, once a swap has written it, must hold a number. Reads only.
 */
export function fenceRow(transport: HostTransport, host: HostConfig, target: string): Check {
  const file = `${fenceDir(host.modelsDir)}/fence`;
  return {
    check: "fence",
    run: async () => {
      const probe = await transport.exec(sh`
          command -v flock >/dev/null 2>&1 || { echo no-flock; exit 0; }
          if [ -s ${file} ]; then echo "seen $(head -c 40 ${file})"; else echo none; fi`);
      const said = probe.stdout.trim();
      if (said === "no-flock")
        return problem(
          "fail",
          target,
          "fence",
          "flock is not installed: every change a swap makes runs under it, so no swap could change this host",
          "FENCE_UNAVAILABLE",
          "install util-linux on the host (apt-get install util-linux)",
        );
      const seen = /^seen (\d+)$/.exec(said)?.[1];
      if (said.startsWith("seen") && seen === undefined)
        return problem(
          "fail",
          target,
          "fence",
          `${file} does not hold a number`,
          "FENCE_UNAVAILABLE",
          `remove ${file} once no swap of ${host.name} runs; modelswap writes it again`,
        );
      return pass(
        target,
        "fence",
        seen === undefined
          ? `flock present; no swap has changed ${host.name} yet`
          : `flock present; the last run that changed ${host.name} was number ${seen}`,
      );
    },
  };
}

export function gpuRow(transport: HostTransport, target: string): Check {
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
export function frontDoorRow(transport: HostTransport, host: HostConfig, target: string): Check {
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
