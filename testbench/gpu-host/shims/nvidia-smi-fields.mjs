/**
 * What `nvidia-smi` reports of a GPU (not a command itself): its status under the simulated load
 * (gpuStatus) and the `--query-gpu` / `--query-compute-apps` fields, each with its header, unit and
 * value, as nvidia-smi.mjs prints them (formats of the real captures in
 * /work/shared/fixtures/gpu-host/h200-1gpu/). The shell fast path (../nvidia-smi-fast-path.ts) takes
 * its tables from here too.
 */
import { DRIVER_VERSION } from "./gpu-sets.mjs";

/**
 * A GPU under the load of the live processes' usage entries (sandbox.mjs liveGpuUsage): its processes, and
 * the utilization, memory used and free, power draw, temperature and performance state nvidia-smi shows.
 */
export function gpuStatus(gpu, usage) {
  const procs = [];
  let util = 0;
  for (const u of usage) {
    const at = u.gpus.indexOf(gpu.index);
    if (at < 0) continue;
    const mem = Array.isArray(u.memMiB) ? Number(u.memMiB[at] ?? 0) : Number(u.memMiB);
    procs.push({ pid: u.pid, name: u.processName, memMiB: Math.max(0, Math.round(mem)) });
    util += u.util;
  }
  util = Math.max(0, Math.min(100, Math.round(util)));
  const capacity = gpu.memoryTotalMiB - gpu.reservedMiB;
  const appsMem = procs.reduce((sum, p) => sum + p.memMiB, 0);
  const used = procs.length > 0 ? Math.min(capacity, appsMem + gpu.processOverheadMiB) : 0;
  const power = gpu.idlePowerW + ((gpu.busyPowerW - gpu.idlePowerW) * util) / 100;
  return {
    procs,
    util,
    memUtil: Math.round(util * 0.6),
    used,
    free: capacity - used,
    powerW: Math.round(power * 100) / 100,
    tempC: Math.round(gpu.idleTempC + ((gpu.busyTempC - gpu.idleTempC) * util) / 100),
    pstate: procs.length > 0 || util > 0 ? "P0" : (gpu.idlePstate ?? "P0"),
  };
}

export const NA = { na: true };

/** Query fields: canonical header (with unit), unit suffix for values, value getter. */
export const FIELDS = {};
function field(names, header, unit, get) {
  for (const n of names) FIELDS[n] = { header, unit, get };
}
field(["timestamp"], "timestamp", "", () => csvTimestamp(new Date()));
field(["driver_version"], "driver_version", "", () => DRIVER_VERSION);
field(["count"], "count", "", (_g, _s, all) => String(all.length));
field(["name", "gpu_name"], "name", "", (g) => g.name);
field(["serial", "gpu_serial"], "serial", "", (g) => g.serial);
field(["uuid", "gpu_uuid"], "uuid", "", (g) => g.uuid);
field(["pci.bus_id", "gpu_bus_id"], "pci.bus_id", "", (g) => g.busId);
field(["pci.domain"], "pci.domain", "", () => "0x0000");
field(["pci.bus"], "pci.bus", "", (g) => `0x${g.busId.slice(9, 11)}`);
field(["index"], "index", "", (g) => String(g.index));
field(["vbios_version"], "vbios_version", "", (g) => g.vbios);
field(["compute_cap"], "compute_cap", "", (g) => g.computeCap);
field(["persistence_mode"], "persistence_mode", "", () => "Enabled");
field(["display_mode"], "display_mode", "", () => "Requested functionality has been deprecated");
field(["display_active"], "display_active", "", () => "Disabled");
field(["pcie.link.gen.current", "pcie.link.gen.gpucurrent"], "pcie.link.gen.current", "", () => "5");
field(["pcie.link.gen.max"], "pcie.link.gen.max", "", () => "5");
field(["pcie.link.width.current"], "pcie.link.width.current", "", () => "16");
field(["pcie.link.width.max"], "pcie.link.width.max", "", () => "16");
field(["fan.speed"], "fan.speed [%]", " %", () => NA);
field(["pstate"], "pstate", "", (_g, s) => s.pstate);
field(["memory.total"], "memory.total [MiB]", " MiB", (g) => String(g.memoryTotalMiB));
field(["memory.reserved"], "memory.reserved [MiB]", " MiB", (g) => String(g.reservedMiB));
field(["memory.used"], "memory.used [MiB]", " MiB", (_g, s) => String(s.used));
field(["memory.free"], "memory.free [MiB]", " MiB", (_g, s) => String(s.free));
field(["compute_mode"], "compute_mode", "", () => "Default");
field(["utilization.gpu"], "utilization.gpu [%]", " %", (_g, s) => String(s.util));
field(["utilization.memory"], "utilization.memory [%]", " %", (_g, s) => String(s.memUtil));
field(["ecc.mode.current"], "ecc.mode.current", "", () => "Enabled");
field(["ecc.mode.pending"], "ecc.mode.pending", "", () => "Enabled");
field(["temperature.gpu"], "temperature.gpu", "", (_g, s) => String(s.tempC));
field(["temperature.memory"], "temperature.memory", "", (g, s) =>
  g.memoryTempC > 0 ? String(g.memoryTempC + Math.round((s.tempC - g.idleTempC) * 0.8)) : NA,
);
field(["power.management"], "power.management", "", () => "Enabled");
field(["power.draw"], "power.draw [W]", " W", (_g, s) => s.powerW.toFixed(2));
field(["power.draw.average"], "power.draw.average [W]", " W", (_g, s) => s.powerW.toFixed(2));
field(["power.draw.instant"], "power.draw.instant [W]", " W", (_g, s) => (s.powerW + 0.25).toFixed(2));
field(["power.limit"], "power.limit [W]", " W", (g) => g.powerLimitW.toFixed(2));
field(["enforced.power.limit"], "enforced.power.limit [W]", " W", (g) => g.powerLimitW.toFixed(2));
field(["power.default_limit"], "power.default_limit [W]", " W", (g) => g.powerLimitW.toFixed(2));
field(["power.max_limit"], "power.max_limit [W]", " W", (g) => g.powerLimitW.toFixed(2));
field(["power.min_limit"], "power.min_limit [W]", " W", (g) => (g.powerLimitW * 0.2857).toFixed(2));
field(["clocks.current.sm", "clocks.sm"], "clocks.current.sm [MHz]", " MHz", (g, s) =>
  String(s.util > 0 ? g.clocks.maxSm : g.clocks.sm),
);
field(["clocks.current.memory", "clocks.mem"], "clocks.current.memory [MHz]", " MHz", (g) =>
  String(g.clocks.mem),
);
field(["clocks.max.sm", "clocks.max.graphics"], "clocks.max.sm [MHz]", " MHz", (g) => String(g.clocks.maxSm));
field(["clocks.max.memory", "clocks.max.mem"], "clocks.max.memory [MHz]", " MHz", (g) =>
  String(g.clocks.maxMem),
);
field(["mig.mode.current"], "mig.mode.current", "", () => "Disabled");
field(["mig.mode.pending"], "mig.mode.pending", "", () => "Disabled");

export const APP_FIELDS = {};
function appField(names, header, unit, get) {
  for (const n of names) APP_FIELDS[n] = { header, unit, get };
}
appField(["timestamp"], "timestamp", "", () => csvTimestamp(new Date()));
appField(["gpu_name"], "gpu_name", "", (p) => p.gpu.name);
appField(["gpu_bus_id"], "gpu_bus_id", "", (p) => p.gpu.busId);
appField(["gpu_serial"], "gpu_serial", "", (p) => p.gpu.serial);
appField(["gpu_uuid"], "gpu_uuid", "", (p) => p.gpu.uuid);
appField(["pid"], "pid", "", (p) => String(p.pid));
appField(["process_name", "name"], "process_name", "", (p) => p.name);
appField(["used_memory", "used_gpu_memory"], "used_gpu_memory [MiB]", " MiB", (p) => String(p.memMiB));

export function pad2(n) {
  return String(n).padStart(2, "0");
}

export function csvTimestamp(d) {
  return `${d.getUTCFullYear()}/${pad2(d.getUTCMonth() + 1)}/${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(
    d.getUTCMinutes(),
  )}:${pad2(d.getUTCSeconds())}.${String(d.getUTCMilliseconds()).padStart(3, "0")}`;
}
