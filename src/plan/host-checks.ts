import { formatGiB } from "./byte-units.ts";
import { smLabel } from "./compatibility.ts";
import { type HostFacts, MAX_UNIT_FILE_BYTES, type PlanCheck } from "./types.ts";

/**
 * The serving unit's file, read to learn what it serves and to diff the new unit against: a file larger
 * than modelswap reads is refused here, before anything is touched (none when it was read).
 */
export function unitFileCheck(host: Pick<HostFacts, "currentUnit">): PlanCheck[] {
  const size = host.currentUnit.oversizeBytes;
  if (size === undefined) return [];
  return [
    {
      id: "unit-file",
      ok: false,
      detail: `the serving unit's file (${host.currentUnit.name}) is ${formatKB(size)}: modelswap reads unit files of up to ${formatKB(MAX_UNIT_FILE_BYTES)} (they are a few KB)`,
      fix: `look at it (systemctl cat ${host.currentUnit.name}): trim what is not the service's definition, or point hosts[].currentUnit at the unit that serves`,
    },
  ];
}

const formatKB = (bytes: number) => `${Math.round(bytes / 1024)} KB`;

export function venvCheck(host: Pick<HostFacts, "venvOk">, venv: string): PlanCheck {
  if (host.venvOk) return { id: "venv", ok: true, detail: `${venv}/bin/python runs` };
  return {
    id: "venv",
    ok: false,
    detail: `${venv}/bin/python is missing or does not run`,
    fix: `create the venv on the host (python3 -m venv ${venv}) with the CUDA torch stack the engine needs; each engine build runs from a directory of its own on this venv's packages, and modelswap never installs into it`,
  };
}

export function hubCliCheck(host: Pick<HostFacts, "hubCli">): PlanCheck {
  if (host.hubCli === "hf") return { id: "hub-cli", ok: true, detail: "hf (huggingface_hub) is installed" };
  const fix = "pip install -U huggingface_hub (in the venv or for the SSH user) gives the hf command";
  if (host.hubCli === "huggingface-cli") {
    return {
      id: "hub-cli",
      ok: false,
      detail:
        "only huggingface-cli is installed: it is deprecated and no longer works in huggingface_hub 1.x",
      fix,
    };
  }
  return { id: "hub-cli", ok: false, detail: "no Hugging Face CLI (hf) on the host", fix };
}

/** GPUs as the plan states them: "8 × NVIDIA RTX PRO 6000 Blackwell Server Edition (sm_120, 95.6 GiB)". */
export function describeGpus(host: Pick<HostFacts, "gpus">): string {
  const first = host.gpus[0];
  if (first === undefined) return "no GPUs found";
  return `${host.gpus.length} × ${first.name} (${smLabel(first.computeCapability)}, ${formatGiB(first.memoryTotalMiB * 1024 * 1024)})`;
}
