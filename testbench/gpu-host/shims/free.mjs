/**
 * Imitates: `free` (procps-ng 4.0.x) on the simulated host. Without `hostMemGiB` in
 * state/config.json it is the real /usr/bin/free with the same arguments. With it, the Mem: row
 * reports a total of hostMemGiB GiB — used, shared and buff/cache are this machine's real ones
 * (/proc/meminfo) plus the host RAM simulated engines pinned (a parked model's weights:
 * sandbox.mjs registerPinnedMemory), free = total − used − buff/cache, available = total − used — in free's own
 * format: `-b`, `-k` (default), `-m`, `-g`, `--kilo`…`--pebi`, `-h`, `--si`, `-w`, `-t`.
 * Other options (`-s`, `-c`, `-l`, `-L`, `-v`, `--help`, `-V`, unknown ones) run the real free.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { livePinnedBytes, readConfig, recordCall } from "./sandbox.mjs";

const REAL = existsSync("/usr/bin/free") ? "/usr/bin/free" : "/bin/free";
const argv = process.argv.slice(2);
recordCall("free", argv);

/** @returns {{ exponent: number; si: boolean; human: boolean; wide: boolean; total: boolean } | null} */
function parseOptions(args) {
  const o = { exponent: 0, si: false, human: false, wide: false, total: false };
  const longs = {
    "--bytes": 1,
    "--kilo": 2,
    "--mega": 3,
    "--giga": 4,
    "--tera": 5,
    "--peta": 6,
    "--kibi": 2,
    "--mebi": 3,
    "--gibi": 4,
    "--tebi": 5,
    "--pebi": 6,
  };
  for (const arg of args) {
    if (arg in longs) {
      o.exponent = longs[arg];
      if (["--kilo", "--mega", "--giga", "--tera", "--peta"].includes(arg)) o.si = true;
    } else if (arg === "--human") o.human = true;
    else if (arg === "--si") o.si = true;
    else if (arg === "--wide") o.wide = true;
    else if (arg === "--total") o.total = true;
    else if (/^-[bkmgwth]+$/.test(arg)) {
      for (const ch of arg.slice(1)) {
        if (ch === "b") o.exponent = 1;
        else if (ch === "k") o.exponent = 2;
        else if (ch === "m") o.exponent = 3;
        else if (ch === "g") o.exponent = 4;
        else if (ch === "w") o.wide = true;
        else if (ch === "t") o.total = true;
        else if (ch === "h") o.human = true;
      }
    } else return null;
  }
  return o;
}

/** procps scale_size: a byte count in the invocation's unit. */
function scale(bytes, o) {
  const base = o.si ? 1000 : 1024;
  if (!o.human) {
    if (o.exponent === 0) return String(Math.floor(bytes / base));
    if (o.exponent === 1) return String(bytes);
    return String(Math.floor(bytes / base ** (o.exponent - 1)));
  }
  if (`${bytes}B`.length <= 4) return `${bytes}B`;
  const units = ["K", "M", "G", "T", "P"];
  for (let i = 1; i <= units.length; i++) {
    const value = bytes / base ** i;
    const unit = o.si ? units[i - 1] : `${units[i - 1]}i`;
    const limit = o.si ? 4 : 5;
    const decimal = `${value.toFixed(1)}${unit}`;
    if (decimal.length <= limit) return decimal;
    const whole = `${Math.trunc(value)}${unit}`;
    if (whole.length <= limit) return whole;
  }
  return `${Math.trunc(bytes / base ** units.length)}${o.si ? "P" : "Pi"}`;
}

/**
 * /proc/meminfo in bytes. MODELSWAP_SIM_MEMINFO names another file in its format: only the comparison
 * with the shell's answer sets it (test/testbench/free-fast-path.test.ts), since this machine's own
 * figures change between two calls.
 */
function meminfo() {
  const values = {};
  for (const line of readFileSync(process.env.MODELSWAP_SIM_MEMINFO || "/proc/meminfo", "utf8").split("\n")) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)/.exec(line);
    if (m) values[m[1]] = Number(m[2]) * 1024;
  }
  return values;
}

function main() {
  const gib = Number(readConfig().hostMemGiB);
  const options = parseOptions(argv);
  if (!(gib > 0) || options === null) {
    const r = spawnSync(REAL, argv, { stdio: "inherit", argv0: "free" });
    return r.status ?? 1;
  }
  const mem = meminfo();
  const total = Math.round(gib * 1024) * 1024 * 1024;
  // this machine's use, plus the host RAM the simulated engines pinned (a parked engine's weights)
  const used = Math.min(
    total,
    Math.max(0, (mem.MemTotal ?? 0) - (mem.MemAvailable ?? mem.MemFree ?? 0)) + livePinnedBytes(),
  );
  const buffers = mem.Buffers ?? 0;
  const cache = (mem.Cached ?? 0) + (mem.SReclaimable ?? 0);
  const shared = mem.Shmem ?? 0;
  const free = Math.max(0, total - used - buffers - cache);
  const available = Math.max(0, total - used);
  const swapTotal = mem.SwapTotal ?? 0;
  const swapFree = mem.SwapFree ?? 0;
  const cell = (/** @type {number} */ v) => ` ${scale(v, options).padStart(11)}`;
  const lines = [
    options.wide
      ? "               total        used        free      shared     buffers       cache   available"
      : "               total        used        free      shared  buff/cache   available",
    `${"Mem:".padEnd(8)}${[total, used, free, shared, ...(options.wide ? [buffers, cache] : [buffers + cache]), available].map(cell).join("")}`,
    `${"Swap:".padEnd(8)}${[swapTotal, swapTotal - swapFree, swapFree].map(cell).join("")}`,
  ];
  if (options.total)
    lines.push(
      `${"Total:".padEnd(8)}${[total + swapTotal, used + swapTotal - swapFree, free + swapFree].map(cell).join("")}`,
    );
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}

process.exitCode = main();
