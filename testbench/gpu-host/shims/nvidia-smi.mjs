/**
 * Imitates `nvidia-smi` (driver 580.159.04, CUDA 13.0) for the simulated host's GPU set
 * (state/config.json "gpus"), in the formats of the real captures in
 * /work/shared/fixtures/gpu-host/h200-1gpu/:
 *
 *   nvidia-smi                                   the summary table (GPUs and processes)
 *   nvidia-smi -L                                one line per GPU with its UUID
 *   nvidia-smi --query-gpu=F1,F2 --format=csv[,noheader][,nounits] [-i N[,M]]
 *   nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv[...]
 *   nvidia-smi --version
 *   -l/--loop SEC, -lms/--loop-ms MS              repeat until killed
 *
 * Load comes from state/gpu-usage/<pid>.json files of live processes (see sandbox.mjs
 * registerGpuUsage). Faults: nvidiaSmi = "driver-error" | "hang" | "no-devices".
 */

import { CUDA_VERSION, DRIVER_VERSION, gpuSet } from "./gpu-sets.mjs";
import { APP_FIELDS, FIELDS, gpuStatus, NA, pad2 } from "./nvidia-smi-fields.mjs";
import {
  liveGpuUsage,
  readConfig,
  readFaults,
  recordCall,
  registerProcess,
  sandboxRoot,
  sleep,
} from "./sandbox.mjs";

const root = sandboxRoot();
const argv = process.argv.slice(2);
recordCall("nvidia-smi", argv, root);

const faults = readFaults(root);
const config = readConfig(root);

function exit(text, code) {
  process.stdout.write(text, () => process.exit(code));
}

// ------------------------------------------------------------------------------------------

function invalidArgs() {
  exit("\nInvalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n", 2);
  return new Promise(() => {});
}

function parseArgs() {
  const o = {
    queryGpu: null,
    queryApps: null,
    format: null,
    ids: null,
    list: false,
    version: false,
    help: false,
    loopMs: 0,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (prefix) => {
      if (a.startsWith(`${prefix}=`)) return a.slice(prefix.length + 1);
      i++;
      return argv[i];
    };
    if (a === "--query-gpu" || a.startsWith("--query-gpu=")) o.queryGpu = value("--query-gpu");
    else if (a === "--query-compute-apps" || a.startsWith("--query-compute-apps="))
      o.queryApps = value("--query-compute-apps");
    else if (a === "--format" || a.startsWith("--format=")) o.format = value("--format");
    else if (a === "-i" || a === "--id" || a.startsWith("--id=")) o.ids = value(a === "-i" ? "-i" : "--id");
    else if (a.startsWith("-i") && a.length > 2) o.ids = a.slice(2);
    else if (a === "-L" || a === "--list-gpus") o.list = true;
    else if (a === "--version") o.version = true;
    else if (a === "-h" || a === "--help") o.help = true;
    else if (a === "-l" || a === "--loop" || a.startsWith("--loop="))
      o.loopMs = Number(value(a === "-l" ? "-l" : "--loop") ?? 5) * 1000;
    else if (a === "-lms" || a === "--loop-ms" || a.startsWith("--loop-ms="))
      o.loopMs = Number(value(a === "-lms" ? "-lms" : "--loop-ms"));
    else return null;
  }
  return o;
}

// ------------------------------------------------------------------------------------------ data

function ctime(d) {
  const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  return `${days[d.getUTCDay()]} ${months[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2)} ${pad2(d.getUTCHours())}:${pad2(
    d.getUTCMinutes(),
  )}:${pad2(d.getUTCSeconds())} ${d.getUTCFullYear()}`;
}

// ------------------------------------------------------------------------------------------ output

function parseFormat(format) {
  const parts = format.split(",").map((p) => p.trim());
  if (parts[0] !== "csv" || parts.slice(1).some((p) => p !== "noheader" && p !== "nounits")) return null;
  return { header: !parts.includes("noheader"), units: !parts.includes("nounits") };
}

function selectGpus(all, ids) {
  if (ids === null || ids === undefined) return all;
  const chosen = [];
  for (const id of String(ids).split(",")) {
    const t = id.trim();
    const gpu = /^\d+$/.test(t)
      ? all.find((g) => g.index === Number(t))
      : all.find(
          (g) =>
            g.uuid === t ||
            g.busId.toLowerCase() === t.toLowerCase() ||
            g.busId.slice(4).toLowerCase() === t.toLowerCase(),
        );
    if (!gpu) return null;
    if (!chosen.includes(gpu)) chosen.push(gpu);
  }
  return chosen;
}

function csvValue(v, unit, withUnits) {
  if (v === NA) return "[N/A]";
  return withUnits ? `${v}${unit}` : v;
}

function queryGpu(spec, fmt, gpus, all, statuses) {
  const names = spec.split(",").map((n) => n.trim());
  for (const n of names) {
    if (!FIELDS[n]) return { text: `Field "${n}" is not a valid field to query.\n\n`, code: 2 };
  }
  const lines = [];
  if (fmt.header) lines.push(names.map((n) => FIELDS[n].header).join(", "));
  for (const g of gpus) {
    const s = statuses.get(g.index);
    lines.push(names.map((n) => csvValue(FIELDS[n].get(g, s, all), FIELDS[n].unit, fmt.units)).join(", "));
  }
  return { text: `${lines.join("\n")}\n`, code: 0 };
}

function queryApps(spec, fmt, gpus, statuses) {
  const names = spec.split(",").map((n) => n.trim());
  for (const n of names) {
    if (!APP_FIELDS[n]) return { text: `Field "${n}" is not a valid field to query.\n\n`, code: 2 };
  }
  const lines = [];
  if (fmt.header) lines.push(names.map((n) => APP_FIELDS[n].header).join(", "));
  for (const g of gpus) {
    for (const p of statuses.get(g.index).procs) {
      const row = { ...p, gpu: g };
      lines.push(
        names.map((n) => csvValue(APP_FIELDS[n].get(row), APP_FIELDS[n].unit, fmt.units)).join(", "),
      );
    }
  }
  return { text: lines.length > 0 ? `${lines.join("\n")}\n` : "", code: 0 };
}

function displayName(name) {
  return name.length > 27 ? `${name.slice(0, 24)}...` : name;
}

function table(gpus, statuses) {
  const sep = `+${"-".repeat(41)}+${"-".repeat(24)}+${"-".repeat(22)}+`;
  const full = `+${"-".repeat(89)}+`;
  const L = [];
  L.push(`${ctime(new Date())}       `);
  L.push(full);
  L.push(
    `| NVIDIA-SMI ${DRIVER_VERSION.padEnd(23)}Driver Version: ${DRIVER_VERSION.padEnd(15)}CUDA Version: ${CUDA_VERSION.padEnd(9)}|`,
  );
  L.push(sep);
  L.push("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |");
  L.push("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |");
  L.push("|                                         |                        |               MIG M. |");
  L.push(`|${"=".repeat(41)}+${"=".repeat(24)}+${"=".repeat(22)}|`);
  for (const g of gpus) {
    const s = statuses.get(g.index);
    L.push(
      `|${String(g.index).padStart(4)}  ${displayName(g.name).padEnd(30)}${"On".padStart(3)}  |   ${g.busId} Off |${g.ecc.padStart(21)} |`,
    );
    const power = `${Math.floor(s.powerW)}W / ${String(g.powerLimitW).padStart(4)}W`;
    L.push(
      `| ${g.fan.padStart(3)}   ${String(s.tempC).padStart(2)}C    ${s.pstate}${power.padStart(24)} |${String(s.used).padStart(8)}MiB / ${String(
        g.memoryTotalMiB,
      ).padStart(6)}MiB |${String(s.util).padStart(7)}%      Default |`,
    );
    L.push(`|${" ".repeat(41)}|${" ".repeat(24)}|${g.mig.padStart(21)} |`);
    L.push(sep);
  }
  L.push("");
  L.push(full);
  L.push(`| ${"Processes:".padEnd(88)}|`);
  L.push("|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |");
  L.push("|        ID   ID                                                               Usage      |");
  L.push(`|${"=".repeat(89)}|`);
  let any = false;
  for (const g of gpus) {
    for (const p of statuses.get(g.index).procs) {
      any = true;
      const mem = `${p.memMiB}MiB`;
      const room = 46 - mem.length - 1;
      const name = p.name.length > room ? `...${p.name.slice(-(room - 3))}` : p.name;
      L.push(
        `|${String(g.index).padStart(5)}   N/A  N/A${String(p.pid).padStart(16)}${"C".padStart(7)}   ${name.padEnd(46 - mem.length)}${mem} |`,
      );
    }
  }
  if (!any) L.push(`|  ${"No running processes found".padEnd(87)}|`);
  L.push(full);
  return `${L.join("\n")}\n`;
}

function help() {
  return (
    `NVIDIA System Management Interface -- v${DRIVER_VERSION}\n\n` +
    "NVSMI provides monitoring information for Tesla and select Quadro devices.\n" +
    "The data is presented in either a plain text or an XML format, via stdout or a file.\n" +
    "NVSMI also provides several management operations for changing the device state.\n\n" +
    "Supported in this simulation: -L, -i, --query-gpu, --query-compute-apps, --format, -l, -lms, --version.\n"
  );
}

async function main() {
  const o = parseArgs();
  if (o === null) return invalidArgs();
  if (o.help) return exit(help(), 0);
  if (o.version) {
    const nvml = DRIVER_VERSION.split(".").slice(0, 2).join(".");
    return exit(
      `NVIDIA-SMI version  : ${DRIVER_VERSION}\nNVML version        : ${nvml}\nDRIVER version      : ${DRIVER_VERSION}\nCUDA Version        : ${CUDA_VERSION}\n`,
      0,
    );
  }
  if ((o.queryGpu !== null || o.queryApps !== null) && o.format === null) return invalidArgs();
  if (o.queryGpu !== null && o.queryApps !== null) return invalidArgs();
  const fmt = o.format !== null ? parseFormat(o.format) : null;
  if (o.format !== null && fmt === null) return invalidArgs();

  const all = gpuSet(config.gpus ?? "h200-1gpu");
  const render = () => {
    // Field errors come before device selection, as in the real tool.
    if (o.queryGpu !== null) {
      for (const n of o.queryGpu.split(",").map((x) => x.trim())) {
        if (!FIELDS[n]) return { text: `Field "${n}" is not a valid field to query.\n\n`, code: 2 };
      }
    }
    if (o.queryApps !== null) {
      for (const n of o.queryApps.split(",").map((x) => x.trim())) {
        if (!APP_FIELDS[n]) return { text: `Field "${n}" is not a valid field to query.\n\n`, code: 2 };
      }
    }
    const gpus = selectGpus(all, o.ids);
    if (gpus === null || gpus.length === 0) return { text: "No devices were found\n", code: 6 };
    const usage = liveGpuUsage(root);
    const statuses = new Map(all.map((g) => [g.index, gpuStatus(g, usage)]));
    if (o.list) {
      return {
        text: gpus.map((g) => `GPU ${g.index}: ${g.name} (UUID: ${g.uuid})`).join("\n") + "\n",
        code: 0,
      };
    }
    if (o.queryGpu !== null) return queryGpu(o.queryGpu, fmt, gpus, all, statuses);
    if (o.queryApps !== null) return queryApps(o.queryApps, fmt, gpus, statuses);
    return { text: table(gpus, statuses), code: 0 };
  };
  const first = render();
  if (o.loopMs <= 0 || first.code !== 0) return exit(first.text, first.code);
  registerProcess(process.pid, "nvidia-smi --loop", root);
  const parent = process.ppid;
  process.stdout.on("error", () => process.exit(0));
  process.stdout.write(first.text);
  for (;;) {
    await sleep(o.loopMs);
    if (process.ppid !== parent) process.exit(0);
    process.stdout.write(render().text);
  }
}

// ------------------------------------------------------------------------------------------ dispatch

if (faults.nvidiaSmi === "driver-error") {
  exit(
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n\n",
    9,
  );
} else if (faults.nvidiaSmi === "hang") {
  // Hang like a wedged driver: never answer. Exit when our caller goes away, and let
  // SimGpuHost.stop() find us.
  registerProcess(process.pid, "nvidia-smi (hang)", root);
  const parent = process.ppid;
  const started = Date.now();
  for (;;) {
    await sleep(200);
    if (process.ppid !== parent || Date.now() - started > 3_600_000) process.exit(124);
  }
} else if (faults.nvidiaSmi === "no-devices") {
  exit("No devices were found\n", 6);
} else {
  await main();
}
