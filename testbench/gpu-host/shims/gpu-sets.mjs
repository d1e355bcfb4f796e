/**
 * The GPU sets a simulated host can have (not a command itself). Values of "h200-1gpu" come from
 * the real captures in /work/shared/fixtures/gpu-host/h200-1gpu/ (nvidia-smi, --query-gpu, -q -x);
 * the other sets are derived from the same formats with each product's public specifications.
 */
import { createHash } from "node:crypto";

const DRIVER = "580.159.04";
const CUDA = "13.0";

/** Bus ids of an 8-GPU HGX/server board. */
const BUS_IDS_8 = [
  "00000000:18:00.0",
  "00000000:2A:00.0",
  "00000000:3A:00.0",
  "00000000:5D:00.0",
  "00000000:9A:00.0",
  "00000000:AB:00.0",
  "00000000:BA:00.0",
  "00000000:DB:00.0",
];

/** Small deterministic per-GPU differences so that 8 GPUs do not look cloned. */
const TEMP_OFFSETS = [0, 1, -1, 2, 0, 1, 3, -1];

const MODELS = {
  h200: {
    name: "NVIDIA H200",
    memoryTotalMiB: 143771,
    reservedMiB: 615,
    computeCap: "9.0",
    powerLimitW: 700,
    idlePowerW: 80.76,
    busyPowerW: 680.05,
    idleTempC: 33,
    busyTempC: 57,
    memoryTempC: 38,
    fan: "N/A",
    ecc: "0",
    mig: "Disabled",
    vbios: "96.00.A5.00.1A",
    serialBase: 1652826070338,
    arch: "Hopper",
    idlePstate: "P0",
    processOverheadMiB: 9,
    clocks: { sm: 345, mem: 3201, maxSm: 1980, maxMem: 3201 },
  },
  "rtx-pro-6000": {
    name: "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    memoryTotalMiB: 97887,
    reservedMiB: 569,
    computeCap: "12.0",
    powerLimitW: 600,
    idlePowerW: 34.52,
    busyPowerW: 584.3,
    idleTempC: 28,
    busyTempC: 71,
    memoryTempC: 0,
    fan: "N/A",
    ecc: "0",
    mig: "Disabled",
    vbios: "98.02.52.00.03",
    serialBase: 1792224019481,
    arch: "Blackwell",
    idlePstate: "P8",
    processOverheadMiB: 9,
    clocks: { sm: 180, mem: 405, maxSm: 3090, maxMem: 14001 },
  },
  // name, memory.total, power.limit and clocks.max.sm as nvidia-smi --query-gpu prints them on an 8× A100
  // SXM4 80 GB node ("NVIDIA A100-SXM4-80GB, 81920 MiB, 400.00 W, 1410"), compute capability 8.0
  a100: {
    name: "NVIDIA A100-SXM4-80GB",
    memoryTotalMiB: 81920,
    reservedMiB: 527,
    computeCap: "8.0",
    powerLimitW: 400,
    idlePowerW: 61.27,
    busyPowerW: 388.41,
    idleTempC: 31,
    busyTempC: 62,
    memoryTempC: 33,
    fan: "N/A",
    ecc: "0",
    mig: "Disabled",
    vbios: "92.00.36.00.02",
    serialBase: 1322221011846,
    arch: "Ampere",
    idlePstate: "P0",
    processOverheadMiB: 9,
    clocks: { sm: 210, mem: 1593, maxSm: 1410, maxMem: 1593 },
  },
  b200: {
    name: "NVIDIA B200",
    memoryTotalMiB: 183359,
    reservedMiB: 785,
    computeCap: "10.0",
    powerLimitW: 1000,
    idlePowerW: 141.37,
    busyPowerW: 962.81,
    idleTempC: 30,
    busyTempC: 64,
    memoryTempC: 36,
    fan: "N/A",
    ecc: "0",
    mig: "Disabled",
    vbios: "97.00.7F.00.05",
    serialBase: 1654924101562,
    arch: "Blackwell",
    idlePstate: "P0",
    processOverheadMiB: 9,
    clocks: { sm: 120, mem: 3996, maxSm: 1965, maxMem: 3996 },
  },
};

/** A deterministic GPU UUID from a seed: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx. */
export function deterministicUuid(seed) {
  const h = createHash("sha256").update(seed).digest("hex");
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function makeSet(setName, modelKey, count, busIds) {
  const model = MODELS[modelKey];
  return Array.from({ length: count }, (_, index) => ({
    index,
    ...model,
    uuid: deterministicUuid(`${setName}/${index}`),
    busId: busIds[index],
    serial: String(model.serialBase + index * 7919),
    idleTempC: model.idleTempC + (count > 1 ? TEMP_OFFSETS[index % 8] : 0),
    idlePowerW: Math.round((model.idlePowerW + (count > 1 ? index * 0.37 : 0)) * 100) / 100,
  }));
}

function buildSets() {
  const h200One = makeSet("h200-1gpu", "h200", 1, ["00000000:00:06.0"]);
  h200One[0].uuid = "GPU-8fe967e7-edb7-eb37-e78a-57cc733ec9e5";
  h200One[0].serial = "1652826070338";
  return {
    "h200-1gpu": h200One,
    "8x-h200": makeSet("8x-h200", "h200", 8, BUS_IDS_8),
    "8x-rtx-pro-6000-blackwell": makeSet("8x-rtx-pro-6000-blackwell", "rtx-pro-6000", 8, BUS_IDS_8),
    "8x-b200": makeSet("8x-b200", "b200", 8, BUS_IDS_8),
    "8x-a100": makeSet("8x-a100", "a100", 8, BUS_IDS_8),
  };
}

export const GPU_SETS = buildSets();
export const GPU_SET_NAMES = Object.keys(GPU_SETS);
export const DRIVER_VERSION = DRIVER;
export const CUDA_VERSION = CUDA;

/** The GPUs of a set (throws on an unknown set name). */
export function gpuSet(name) {
  const set = GPU_SETS[name];
  if (!set) throw new Error(`unknown GPU set ${name}; known: ${GPU_SET_NAMES.join(", ")}`);
  return set;
}
