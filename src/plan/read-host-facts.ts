import { readGpus } from "../gpu/nvidia-smi.ts";
import { lines, type ShellCommand, sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import { type HostFacts, MAX_UNIT_FILE_BYTES } from "./types.ts";

export interface HostFactsTarget {
  host: string;
  modelsDir: string;
  venv: string;
  currentUnit: string;
  /** The model's target directory: bytes already there need not be fetched again. */
  modelDir: string;
}

type Exec = Pick<HostTransport, "exec">;

/**
 * Preflight's read of a host: GPUs, free disk where models go, bytes of this model already on disk,
 * RAM, the engine venv, the Hub CLI, and the unit serving now (with its unit file). Reads only.
 */
export async function readHostFacts(transport: Exec, target: HostFactsTarget): Promise<HostFacts> {
  const [gpus, disk, memory, venv, hubCli, unit] = await Promise.all([
    readGpus(transport),
    // one command: the free space, then the bytes of this model already there
    transport.exec(
      lines([
        freeDiskCommand(target.modelsDir),
        sh`
      if [ -d ${target.modelDir} ]; then
        find ${target.modelDir} -path '*/.cache' -prune -o -type f -printf '%s\\n' | awk '{s+=$1} END {print s+0}'
      else echo 0; fi`,
      ]),
    ),
    // total and available RAM, then whether vmtouch is there (the page-cache preload)
    transport.exec(
      sh`free -b | awk '/^Mem:/ {print $2, $7}'; command -v vmtouch >/dev/null 2>&1 && echo vmtouch || echo none`,
    ),
    readVenvPython(transport, target.venv),
    readHubCli(transport),
    transport.exec(sh`
      systemctl show ${target.currentUnit} --property=LoadState,ActiveState,FragmentPath
      f=$(systemctl show ${target.currentUnit} --property=FragmentPath --value)
      if [ -n "$f" ] && [ -r "$f" ]; then echo "UnitFileBytes=$(wc -c < "$f")"; fi
      echo ---unit---
      if [ -n "$f" ] && [ -r "$f" ]; then head -c ${MAX_UNIT_FILE_BYTES + 1} "$f"; fi`),
  ]);
  const [avail = "0", onDisk = "0"] = disk.stdout
    .trim()
    .split("\n")
    .map((l) => l.trim());
  const [memLine = "", tool = ""] = memory.stdout.trim().split("\n");
  const [memTotal = "0", memAvailable = ""] = memLine.trim().split(/\s+/);
  const [show = "", text = ""] = unit.stdout.split("---unit---\n");
  const props = new Map(
    show
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const),
  );
  const unitBytes = Number(props.get("UnitFileBytes")) || 0;
  const oversize = unitBytes > MAX_UNIT_FILE_BYTES;
  return {
    host: target.host,
    gpus,
    freeDiskBytes: Number(avail) || 0,
    bytesOnDisk: Number(onDisk) || 0,
    memoryBytes: Number(memTotal) || 0,
    ...(Number.isFinite(Number(memAvailable)) && memAvailable !== ""
      ? { memoryAvailableBytes: Number(memAvailable) }
      : {}),
    vmtouch: tool.trim() === "vmtouch",
    venvOk: venv.ok,
    hubCli,
    currentUnit: {
      name: target.currentUnit,
      exists: props.get("LoadState") === "loaded",
      active: props.get("ActiveState") === "active",
      text: oversize ? "" : text,
      execStart: oversize ? [] : execStartWords(text),
      ...(oversize ? { oversizeBytes: unitBytes } : {}),
    },
  };
}

/** Bytes available to the bot's user at `dir`, or at its nearest existing parent while it does not exist. */
export async function readFreeDiskBytes(transport: Exec, dir: string): Promise<number> {
  const disk = await transport.exec(freeDiskCommand(dir));
  return Number(disk.stdout.trim().split("\n")[0]) || 0;
}

/** `df -B1 --output=avail` of `dir` (or its nearest existing parent): one line, the bytes available. */
function freeDiskCommand(dir: string): ShellCommand {
  return sh`
    d=${dir}; while [ ! -d "$d" ]; do d=$(dirname "$d"); done
    df -B1 --output=avail "$d" | tail -n 1`;
}

/** Whether `<venv>/bin/python` runs, and the version it says (`Python 3.12.3`). */
export async function readVenvPython(
  transport: Exec,
  venv: string,
): Promise<{ ok: boolean; version: string; said: string }> {
  const python = `${venv}/bin/python`;
  const result = await transport.exec(sh`test -x ${python} && ${python} --version 2>&1`);
  const said = (result.stdout.trim() || result.stderr.trim()).split("\n").at(-1) ?? "";
  return { ok: result.code === 0, version: result.code === 0 ? said : "", said };
}

/** Which Hugging Face CLI the SSH user's PATH has: `hf`, only the old `huggingface-cli`, or none. */
export async function readHubCli(transport: Exec): Promise<HostFacts["hubCli"]> {
  const cli = await transport.exec(sh`command -v hf || true; command -v huggingface-cli || true`);
  const lines = cli.stdout.split("\n").map((l) => l.trim());
  if (lines.some((l) => l.endsWith("/hf"))) return "hf";
  if (lines.some((l) => l.endsWith("/huggingface-cli"))) return "huggingface-cli";
  return undefined;
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
