/**
 * Imitates: `df` (GNU coreutils) on the simulated host. It is the real /usr/bin/df, run with the
 * same arguments (output, errors and exit status untouched), unless the fault `diskSizeBytes: N` (a disk
 * of N bytes holding the sandbox: available is N less du of the sandbox, so deletes free space) or `diskFreeBytes: N`
 * is set: then every row of a FILE operand inside the sandbox reports N bytes available — Used and
 * Use% follow (the size grows when N exceeds it) — in df's own format: the same columns
 * (`--output=…`, `-T`, `-P`), block sizes (`-B1`, `-BG`, `-k`, default 1K) or `-h`/`-H`, values
 * rounded up like df, columns re-aligned like df. Inode columns and rows outside the sandbox keep
 * their real values; without FILE operands the output is the real one.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { fault, recordCall, sandboxRoot } from "./sandbox.mjs";

const REAL = existsSync("/usr/bin/df") ? "/usr/bin/df" : "/bin/df";
const argv = process.argv.slice(2);
recordCall("df", argv);

/** df's columns: minimum width and alignment (coreutils df.c field_data). */
const FIELDS = {
  source: { width: 14, left: true },
  fstype: { width: 4, left: true },
  itotal: { width: 5, left: false },
  iused: { width: 5, left: false },
  iavail: { width: 5, left: false },
  ipcent: { width: 4, left: false },
  size: { width: 5, left: false },
  used: { width: 5, left: false },
  avail: { width: 5, left: false },
  pcent: { width: 4, left: false },
  file: { width: 0, left: true },
  target: { width: 0, left: true },
};
const ALL_FIELDS = Object.keys(FIELDS).filter((f) => f !== "file" && f !== "target");
ALL_FIELDS.push("file", "target");

/**
 * The columns and units of this invocation, or null when the arguments are beyond this shim
 * (then the real output is kept).
 * @param {string[]} args
 */
function parseOptions(args) {
  let output = null;
  let printType = false;
  let inodes = false;
  let human = 0; // 1024 for -h, 1000 for -H
  let blockSpec = null;
  let total = false;
  const operands = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (arg.startsWith("--")) {
      const [key, value] = arg.includes("=")
        ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
        : [arg, null];
      if (key === "--output") output = value === null ? [...ALL_FIELDS] : value.split(",");
      else if (key === "--block-size") blockSpec = value ?? args[++i];
      else if (key === "--human-readable") human = 1024;
      else if (key === "--si") human = 1000;
      else if (key === "--inodes") inodes = true;
      else if (key === "--print-type") printType = true;
      else if (key === "--total") total = true;
      else if (key === "--portability") blockSpec = blockSpec ?? "1024";
      else if (key === "--type" || key === "--exclude-type") {
        if (value === null) i++;
      } else if (!["--all", "--local", "--sync", "--no-sync"].includes(key)) return null;
      continue;
    }
    if (arg.startsWith("-") && arg.length > 1) {
      for (let j = 1; j < arg.length; j++) {
        const ch = arg[j];
        if (ch === "B" || ch === "t" || ch === "x") {
          const value = j + 1 < arg.length ? arg.slice(j + 1) : args[++i];
          if (ch === "B") blockSpec = value;
          break;
        }
        if (ch === "h") human = 1024;
        else if (ch === "H") human = 1000;
        else if (ch === "k") blockSpec = "1024";
        else if (ch === "T") printType = true;
        else if (ch === "i") inodes = true;
        else if (!"aPlv".includes(ch)) return null;
      }
      continue;
    }
    operands.push(arg);
  }
  let fields = output;
  if (fields === null) {
    fields = ["source", ...(printType ? ["fstype"] : [])];
    fields.push(...(inodes ? ["itotal", "iused", "iavail", "ipcent"] : ["size", "used", "avail", "pcent"]));
    fields.push("target");
  }
  if (fields.some((f) => !(f in FIELDS))) return null;
  if (blockSpec === null && human === 0) {
    blockSpec = process.env.DF_BLOCK_SIZE || process.env.BLOCK_SIZE || process.env.BLOCKSIZE || null;
    if (blockSpec === null && process.env.POSIXLY_CORRECT !== undefined) blockSpec = "512";
  }
  const units = human ? { human } : parseBlockSize(blockSpec ?? "1024");
  if (units === null) return null;
  return { fields, units, operands, total };
}

/**
 * `-B SIZE`: "1", "1024", "K", "1M", "GB", "GiB". A SIZE without leading digits prints its
 * suffix after every value (`-BG` → `79G`), as df does.
 * @param {string} spec
 */
function parseBlockSize(spec) {
  const m = /^'?(\d*)([KMGTPEZY]?)(iB|B)?$/i.exec(spec);
  if (!m) return null;
  const [, digits, letter, tail] = m;
  const base = tail === "B" ? 1000 : 1024;
  const power = letter === "" ? 0 : "KMGTPEZY".indexOf(letter.toUpperCase()) + 1;
  const size = (digits === "" ? 1 : Number(digits)) * base ** power;
  if (!(size > 0)) return null;
  return { size, suffix: digits === "" ? `${letter}${tail ?? ""}` : "" };
}

/** df's human-readable form (-h: powers of 1024, -H: of 1000), rounded up. @param {number} bytes @param {number} base */
function humanCeil(bytes, base) {
  const letters = base === 1024 ? ["", "K", "M", "G", "T", "P", "E"] : ["", "k", "M", "G", "T", "P", "E"];
  let exponent = 0;
  while (Math.floor(bytes / base ** exponent) >= base && exponent < letters.length - 1) exponent++;
  if (exponent === 0) return String(bytes);
  const value = bytes / base ** exponent;
  if (Math.floor(value) < 10) {
    const tenths = Math.ceil(value * 10 - 1e-9);
    if (tenths < 100) return `${(tenths / 10).toFixed(1)}${letters[exponent]}`;
    return `10${letters[exponent]}`;
  }
  const whole = Math.ceil(value - 1e-9);
  if (whole >= base && exponent < letters.length - 1) return `1.0${letters[exponent + 1]}`;
  return `${whole}${letters[exponent]}`;
}

/** A byte count in the invocation's units. */
function formatBytes(bytes, units) {
  if ("human" in units) return humanCeil(bytes, units.human);
  return `${Math.ceil(bytes / units.size)}${units.suffix}`;
}

/** Splits a table line into cells (the last text column may contain spaces). */
function cells(line, fields) {
  const tokens = line.trim().split(/\s+/);
  const last = fields.length - 1;
  if (tokens.length > fields.length && FIELDS[fields[last]].left)
    return [...tokens.slice(0, last), tokens.slice(last).join(" ")];
  return tokens;
}

/** Lays the table out as df does: per-column width, one space apart, no trailing padding. */
function render(rows, fields) {
  const widths = fields.map((f, i) => Math.max(FIELDS[f].width, ...rows.map((r) => r[i].length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => {
          if (!FIELDS[fields[i]].left) return cell.padStart(widths[i]);
          return i === row.length - 1 ? cell : cell.padEnd(widths[i]);
        })
        .join(" "),
    )
    .join("\n");
}

/** size/used/avail of the file system holding `path`, in bytes (real df). */
function realBytes(path) {
  const r = spawnSync(REAL, ["-B1", "--output=size,used,avail", path], { encoding: "utf8" });
  const line = r.stdout?.split("\n")[1]?.trim();
  if (r.status !== 0 || !line) return null;
  const [size, used, avail] = line.split(/\s+/).map(Number);
  return { size, used, avail };
}

/**
 * The bytes available in the simulated file system: `diskSizeBytes` less what the sandbox holds now (du, so
 * a file written or deleted shows at once, as on a real disk), or `diskFreeBytes` as given; undefined: real.
 */
function simulatedFree() {
  const size = Number(fault("diskSizeBytes"));
  if (fault("diskSizeBytes") !== undefined && Number.isFinite(size) && size >= 0) {
    const du = spawnSync("du", ["-sB1", sandboxRoot()], { encoding: "utf8" });
    const used = Number(du.stdout?.split("\t")[0]) || 0;
    return Math.max(0, size - used);
  }
  const free = Number(fault("diskFreeBytes"));
  if (fault("diskFreeBytes") === undefined || !Number.isFinite(free) || free < 0) return undefined;
  return free;
}

function main() {
  const freeBytes = simulatedFree();
  if (freeBytes === undefined) {
    const r = spawnSync(REAL, argv, { stdio: "inherit", argv0: "df" });
    return r.status ?? 1;
  }
  const real = spawnSync(REAL, argv, { encoding: "utf8", argv0: "df" });
  process.stderr.write(real.stderr ?? "");
  const stdout = real.stdout ?? "";
  const options = parseOptions(argv);
  const lines = stdout.split("\n").filter((l) => l !== "");
  const root = sandboxRoot();
  const existing = options?.operands.filter((o) => existsSync(o)) ?? [];
  const inside = (/** @type {string} */ p) => {
    const abs = resolve(p);
    return abs === root || abs.startsWith(`${root}/`);
  };
  if (
    options === null ||
    lines.length < 2 ||
    !existing.some(inside) ||
    lines.length - 1 - (options.total ? 1 : 0) !== existing.length
  ) {
    process.stdout.write(stdout);
    return real.status ?? 1;
  }
  const { fields, units } = options;
  const header = cells(lines[0].replace("Mounted on", "Mounted\u0000on"), fields).map((c) =>
    c.replace("\u0000", " "),
  );
  const rows = lines.slice(1).map((l) => cells(l, fields));
  if ([header, ...rows].some((r) => r.length !== fields.length)) {
    process.stdout.write(stdout);
    return real.status ?? 1;
  }
  existing.forEach((operand, i) => {
    if (!inside(operand)) return;
    const bytes = realBytes(operand);
    if (bytes === null) return;
    const reserved = Math.max(0, bytes.size - bytes.used - bytes.avail);
    const avail = freeBytes;
    const used = Math.max(0, bytes.size - reserved - avail);
    const size = used === 0 ? avail + reserved : bytes.size;
    const pcent = used + avail === 0 ? "-" : `${Math.ceil((used * 100) / (used + avail))}%`;
    const values = {
      size: formatBytes(size, units),
      used: formatBytes(used, units),
      avail: formatBytes(avail, units),
      pcent,
    };
    fields.forEach((f, j) => {
      if (f in values) rows[i][j] = values[f];
    });
  });
  process.stdout.write(`${render([header, ...rows], fields)}\n`);
  return real.status ?? 0;
}

process.exitCode = main();
