import { gpuQueryCommand, nvidiaSmiError, parseGpuQuery } from "../gpu/nvidia-smi.ts";
import { sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import type { HostFacts } from "./types.ts";

export interface HostFactsTarget {
  host: string;
  modelsDir: string;
  venv: string;
  currentUnit: string;
  /** The model's target directory: bytes already there need not be fetched again. */
  modelDir: string;
}

/**
 * Preflight's read of a host: GPUs, free disk where models go, bytes of this model already on disk,
 * RAM, the engine venv, the Hub CLI, and the unit serving now (with its unit file). Reads only.
 */
export async function readHostFacts(
  transport: Pick<HostTransport, "exec">,
  target: HostFactsTarget,
): Promise<HostFacts> {
  const [gpus, disk, memory, venv, cli, unit] = await Promise.all([
    transport.exec(gpuQueryCommand()),
    transport.exec(sh`
      d=${target.modelsDir}; while [ ! -d "$d" ]; do d=$(dirname "$d"); done
      df -B1 --output=avail "$d" | tail -n 1
      if [ -d ${target.modelDir} ]; then
        find ${target.modelDir} -path '*/.cache' -prune -o -type f -printf '%s\\n' | awk '{s+=$1} END {print s+0}'
      else echo 0; fi`),
    transport.exec(sh`free -b | awk '/^Mem:/ {print $2}'`),
    transport.exec(
      sh`test -x ${`${target.venv}/bin/python`} && ${`${target.venv}/bin/python`} --version 2>&1`,
    ),
    transport.exec(sh`command -v hf || true; command -v huggingface-cli || true`),
    transport.exec(sh`
      systemctl show ${target.currentUnit} --property=LoadState,ActiveState,FragmentPath
      f=$(systemctl show ${target.currentUnit} --property=FragmentPath --value)
      echo ---unit---
      if [ -n "$f" ] && [ -r "$f" ]; then cat "$f"; fi`),
  ]);
  if (gpus.code !== 0) throw nvidiaSmiError(gpus.code, gpus.stderr, gpus.stdout);
  const [avail = "0", onDisk = "0"] = disk.stdout
    .trim()
    .split("\n")
    .map((l) => l.trim());
  const cliLines = cli.stdout.split("\n").map((l) => l.trim());
  const [show = "", text = ""] = unit.stdout.split("---unit---\n");
  const props = new Map(
    show
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const),
  );
  return {
    host: target.host,
    gpus: parseGpuQuery(gpus.stdout),
    freeDiskBytes: Number(avail) || 0,
    bytesOnDisk: Number(onDisk) || 0,
    memoryBytes: Number(memory.stdout.trim()) || 0,
    venvOk: venv.code === 0,
    hubCli: cliLines.some((l) => l.endsWith("/hf"))
      ? "hf"
      : cliLines.some((l) => l.endsWith("/huggingface-cli"))
        ? "huggingface-cli"
        : undefined,
    currentUnit: {
      name: target.currentUnit,
      exists: props.get("LoadState") === "loaded",
      active: props.get("ActiveState") === "active",
      text,
      execStart: execStartWords(text),
    },
  };
}

/** The value of `flag` among ExecStart words (`--flag value` or `--flag=value`, the first one), if given. */
export function execStartFlag(words: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === flag) return words[i + 1];
    if (word.startsWith(`${flag}=`)) return word.slice(flag.length + 1);
  }
  return undefined;
}

/** The words of a unit file's ExecStart (continuation lines joined; quotes removed). */
export function execStartWords(unitText: string): string[] {
  const joined = unitText.replace(/\\\n/g, " ");
  const line = joined.split("\n").find((l) => l.trim().startsWith("ExecStart="));
  if (line === undefined) return [];
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const match of line.trim().slice("ExecStart=".length).matchAll(re)) {
    words.push(match[1] ?? match[2] ?? match[3] ?? "");
  }
  return words;
}
