import { z } from "zod";
import { CodedError } from "../errors.ts";
import { type ShellCommand, sh } from "../host/shell-quote.ts";
import type { ExecOptions, HostTransport } from "../host/transport.ts";

/** The fields modelswap reads, in the order `--query-gpu` prints them. */
export const GPU_QUERY_FIELDS = [
  "index",
  "name",
  "uuid",
  "memory.total",
  "memory.used",
  "memory.free",
  "utilization.gpu",
  "temperature.gpu",
  "power.draw",
  "compute_cap",
  "driver_version",
] as const;

export const gpuInfoSchema = z.object({
  index: z.number(),
  name: z.string(),
  uuid: z.string(),
  memoryTotalMiB: z.number(),
  memoryUsedMiB: z.number(),
  memoryFreeMiB: z.number(),
  /** null when the driver reports [N/A] or [Not Supported]. */
  utilizationPct: z.number().nullable(),
  temperatureC: z.number().nullable(),
  powerDrawW: z.number().nullable(),
  /** e.g. { major: 9, minor: 0 } for an H200, 12.0 for RTX PRO 6000 Blackwell. */
  computeCapability: z.object({ major: z.number(), minor: z.number() }),
  driverVersion: z.string(),
});
export type GpuInfo = z.infer<typeof gpuInfoSchema>;

export function gpuQueryCommand(): ShellCommand {
  return sh`nvidia-smi ${`--query-gpu=${GPU_QUERY_FIELDS.join(",")}`} --format=csv,noheader,nounits`;
}

/** The host's GPUs from `nvidia-smi --query-gpu`; a failing nvidia-smi throws its error (nvidiaSmiError). */
export async function readGpus(
  transport: Pick<HostTransport, "exec">,
  options: ExecOptions = {},
): Promise<GpuInfo[]> {
  const result = await transport.exec(gpuQueryCommand(), options);
  if (result.code !== 0) throw nvidiaSmiError(result.code, result.stderr, result.stdout);
  return parseGpuQuery(result.stdout);
}

/**
 * Parses `nvidia-smi --query-gpu=<GPU_QUERY_FIELDS> --format=csv,noheader,nounits`: one line per GPU,
 * values separated by ", " (names never contain commas).
 */
export function parseGpuQuery(output: string): GpuInfo[] {
  const lines = output.split("\n").filter((line) => line.trim() !== "");
  return lines.map((line, lineIndex) => {
    const values = line.split(",").map((value) => value.trim());
    if (values.length !== GPU_QUERY_FIELDS.length) {
      throw malformed(
        `line ${lineIndex + 1} has ${values.length} fields, expected ${GPU_QUERY_FIELDS.length}`,
        line,
      );
    }
    const [index, name, uuid, total, used, free, util, temp, power, cc, driver] = values as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const capability = /^(\d+)\.(\d+)$/.exec(cc);
    if (capability === null) throw malformed(`compute capability "${cc}" is not MAJOR.MINOR`, line);
    return {
      index: requiredNumber(index, "index", line),
      name,
      uuid,
      memoryTotalMiB: requiredNumber(total, "memory.total", line),
      memoryUsedMiB: requiredNumber(used, "memory.used", line),
      memoryFreeMiB: requiredNumber(free, "memory.free", line),
      utilizationPct: optionalNumber(util),
      temperatureC: optionalNumber(temp),
      powerDrawW: optionalNumber(power),
      computeCapability: { major: Number(capability[1]), minor: Number(capability[2]) },
      driverVersion: driver,
    };
  });
}

/** Explains a failed nvidia-smi run (exit status and its own message) as a coded error. */
export function nvidiaSmiError(code: number | null, stderr: string, stdout: string): CodedError {
  const said = (stderr.trim() || stdout.trim()).split("\n")[0] ?? "";
  if (code === 127) {
    return new CodedError(
      "HOST_COMMAND_FAILED",
      "nvidia-smi is not installed on the host (or not on the SSH session's PATH)",
      "install the NVIDIA driver utilities, or add their directory to the host's extraPath",
    );
  }
  return new CodedError(
    "HOST_COMMAND_FAILED",
    `nvidia-smi failed (exit ${code ?? "signal"}): ${said}`,
    code === 9
      ? "the NVIDIA driver is not responding: check `dmesg` and the driver on the host; a reboot may be needed"
      : "run nvidia-smi on the host by hand to see what is wrong",
  );
}

function requiredNumber(value: string, field: string, line: string): number {
  const parsed = optionalNumber(value);
  if (parsed === null) throw malformed(`${field} "${value}" is not a number`, line);
  return parsed;
}

function optionalNumber(value: string): number | null {
  if (value === "" || value.startsWith("[")) return null;
  const parsed = Number(value);
  return Number.isFinite(parsed) ? parsed : null;
}

function malformed(detail: string, line: string): CodedError {
  return new CodedError(
    "HOST_COMMAND_FAILED",
    `unexpected nvidia-smi output: ${detail} (in "${line.slice(0, 200)}")`,
    "check the driver version on the host; modelswap expects the CSV format of nvidia-smi 5xx",
  );
}
