/**
 * Imitates `journalctl` (systemd 255) reading the simulated host's per-unit journals
 * (<root>/state/journal/<unit>.log, written by the unit supervisor).
 *
 *   journalctl [-u UNIT]... [-n N | --lines=N | -e] [--no-pager] [-o short|short-iso|short-precise|cat|json]
 *              [--since T] [--until T] [-g REGEX] [-r] [-f] [-q] [--no-hostname]
 *
 * Times are shown in UTC. Without -u every unit's journal is merged. With no matching entries
 * it prints "-- No entries --".
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readConfig, recordCall, registerProcess, sandboxPaths, sandboxRoot, sleep } from "./sandbox.mjs";
import { formatSyslogTime, normalizeUnitName } from "./units.mjs";

const root = sandboxRoot();
const argv = process.argv.slice(2);
recordCall("journalctl", argv, root);

const opts = {
  units: [],
  lines: undefined,
  output: "short",
  since: undefined,
  until: undefined,
  grep: undefined,
  reverse: false,
  follow: false,
  quiet: false,
  hostname: true,
};

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const next = () => {
    i++;
    if (i >= argv.length) fail(`journalctl: option '${a}' requires an argument`);
    return argv[i];
  };
  if (a === "-u" || a === "--unit") opts.units.push(next());
  else if (a.startsWith("--unit=")) opts.units.push(a.slice(7));
  else if (a.startsWith("-u") && a.length > 2) opts.units.push(a.slice(2));
  else if (a === "-n" || a === "--lines") {
    const v = argv[i + 1];
    if (v !== undefined && /^(\+?\d+|all)$/.test(v)) {
      opts.lines = v;
      i++;
    } else opts.lines = "10";
  } else if (a.startsWith("--lines=")) opts.lines = a.slice(8);
  else if (/^-n(\+?\d+|all)$/.test(a)) opts.lines = a.slice(2);
  else if (a === "-e" || a === "--pager-end") opts.lines ??= "1000";
  else if (a === "-o" || a === "--output") opts.output = next();
  else if (a.startsWith("--output=")) opts.output = a.slice(9);
  else if (a.startsWith("-o") && a.length > 2) opts.output = a.slice(2);
  else if (a === "-S" || a === "--since") opts.since = next();
  else if (a.startsWith("--since=")) opts.since = a.slice(8);
  else if (a === "-U" || a === "--until") opts.until = next();
  else if (a.startsWith("--until=")) opts.until = a.slice(8);
  else if (a === "-g" || a === "--grep") opts.grep = next();
  else if (a.startsWith("--grep=")) opts.grep = a.slice(7);
  else if (a === "-r" || a === "--reverse") opts.reverse = true;
  else if (a === "-f" || a === "--follow") opts.follow = true;
  else if (a === "-q" || a === "--quiet") opts.quiet = true;
  else if (a === "--no-hostname") opts.hostname = false;
  else if (
    a === "-p" ||
    a === "--priority" ||
    a === "-t" ||
    a === "--identifier" ||
    a === "-b" ||
    a === "--boot"
  ) {
    // -b takes an optional argument; the others one: skip a following non-option value
    if (argv[i + 1] !== undefined && !argv[i + 1].startsWith("-")) i++;
  } else if (
    [
      "--no-pager",
      "-x",
      "--catalog",
      "-a",
      "--all",
      "-l",
      "--full",
      "--no-full",
      "--system",
      "--utc",
      "-m",
      "--merge",
    ].includes(a) ||
    a.startsWith("--priority=") ||
    a.startsWith("--boot=") ||
    a.startsWith("--identifier=")
  ) {
    // accepted; no effect here
  } else if (a.startsWith("-")) {
    fail(`journalctl: unrecognized option '${a}'`);
  } else {
    // match expressions like _SYSTEMD_UNIT=x.service
    const m = /^_?SYSTEMD_UNIT=(.+)$/.exec(a) ?? /^UNIT=(.+)$/.exec(a);
    if (m) opts.units.push(m[1]);
  }
}

const OUTPUTS = [
  "short",
  "short-iso",
  "short-iso-precise",
  "short-precise",
  "short-full",
  "cat",
  "json",
  "verbose",
  "with-unit",
];
if (!OUTPUTS.includes(opts.output)) fail(`Unknown output format '${opts.output}'.`);

/** Parses journalctl time specifications (UTC): "YYYY-MM-DD [HH:MM[:SS]]", "HH:MM[:SS]", today, yesterday, now, -5min, "5 min ago", @epoch. */
function parseTime(spec) {
  const s = spec.trim();
  const now = Date.now();
  const startOfDay = (t) => {
    const d = new Date(t);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  };
  if (s === "now") return now;
  if (s === "today") return startOfDay(now);
  if (s === "yesterday") return startOfDay(now) - 86_400_000;
  if (s === "tomorrow") return startOfDay(now) + 86_400_000;
  if (s.startsWith("@")) return Number(s.slice(1)) * 1000;
  const units = {
    s: 1000,
    sec: 1000,
    second: 1000,
    seconds: 1000,
    m: 60_000,
    min: 60_000,
    minute: 60_000,
    minutes: 60_000,
    h: 3_600_000,
    hour: 3_600_000,
    hours: 3_600_000,
    d: 86_400_000,
    day: 86_400_000,
    days: 86_400_000,
    ms: 1,
    us: 0.001,
  };
  const rel = /^([+-])?\s*(\d+(?:\.\d+)?)\s*([a-z]+)(\s+ago)?$/.exec(s);
  if (rel && units[rel[3]] !== undefined) {
    const delta = Number(rel[2]) * units[rel[3]];
    return rel[1] === "+" ? now + delta : now - delta;
  }
  let m =
    /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(?:Z|UTC|[+-]00:?00)?$/.exec(
      s,
    );
  if (m) {
    return Date.UTC(
      Number(m[1]),
      Number(m[2]) - 1,
      Number(m[3]),
      Number(m[4] ?? 0),
      Number(m[5] ?? 0),
      Number(m[6] ?? 0),
      Number((m[7] ?? "0").padEnd(3, "0").slice(0, 3)),
    );
  }
  m = /^(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(s);
  if (m) return startOfDay(now) + (Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0)) * 1000;
  const parsed = Date.parse(s);
  if (!Number.isNaN(parsed)) return parsed;
  fail(`Failed to parse timestamp: ${spec}`);
  return 0;
}

const since = opts.since !== undefined ? parseTime(opts.since) : undefined;
const until = opts.until !== undefined ? parseTime(opts.until) : undefined;
let grep;
if (opts.grep !== undefined) {
  try {
    // journalctl's --grep is case-insensitive when the pattern has no uppercase letters
    grep = new RegExp(opts.grep, /[A-Z]/.test(opts.grep) ? "" : "i");
  } catch {
    fail(`Bad pattern "${opts.grep}"`);
  }
}

const journalDir = sandboxPaths(root).journalDir;
const hostname = readConfig(root).name ?? "gpu-host";

function globToRegExp(glob) {
  const escaped = glob
    .replace(/[.+^${}()|\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${escaped}$`);
}

function journalFiles() {
  let files = [];
  try {
    files = readdirSync(journalDir).filter((f) => f.endsWith(".log"));
  } catch {
    return [];
  }
  const names = files.map((f) => f.slice(0, -4));
  if (opts.units.length === 0) return names;
  const wanted = new Set();
  for (const u of opts.units) {
    const normalized = /[*?]/.test(u) ? u : normalizeUnitName(u);
    const re = globToRegExp(normalized);
    for (const n of names)
      if (re.test(n) || (/[*?]/.test(u) && globToRegExp(`${u}.service`).test(n))) wanted.add(n);
  }
  return [...wanted];
}

/** Every entry of the selected journals: { t, iso, pid, comm, message, unit, seq }. */
function readEntries() {
  const entries = [];
  let seq = 0;
  for (const unit of journalFiles()) {
    let text = "";
    try {
      text = readFileSync(join(journalDir, `${unit}.log`), "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      if (line === "") continue;
      const parts = line.split("\t");
      if (parts.length < 4) continue;
      const [iso, pid, comm, ...rest] = parts;
      entries.push({ t: Date.parse(iso), iso, pid, comm, message: rest.join("\t"), unit, seq: seq++ });
    }
  }
  entries.sort((a, b) => a.t - b.t || a.seq - b.seq);
  return entries;
}

function pad2(n) {
  return String(n).padStart(2, "0");
}

function isoSeconds(d) {
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}T${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
}

function format(e) {
  const d = new Date(e.t);
  const micros = `${String(d.getUTCMilliseconds()).padStart(3, "0")}000`;
  const host = opts.hostname ? ` ${hostname}` : "";
  const ident = `${e.comm}[${e.pid}]`;
  switch (opts.output) {
    case "cat":
      return e.message;
    case "short-iso":
      return `${isoSeconds(d)}+00:00${host} ${ident}: ${e.message}`;
    case "short-iso-precise":
      return `${isoSeconds(d)}.${micros}+00:00${host} ${ident}: ${e.message}`;
    case "short-precise":
      return `${formatSyslogTime(d)}.${micros}${host} ${ident}: ${e.message}`;
    case "short-full":
      return `${["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][d.getUTCDay()]} ${isoSeconds(d).replace("T", " ")} UTC${host} ${ident}: ${e.message}`;
    case "with-unit":
      return `${formatSyslogTime(d)}${host} ${e.unit}: ${e.message}`;
    case "json":
    case "verbose":
      return JSON.stringify({
        __REALTIME_TIMESTAMP: String(e.t * 1000),
        _HOSTNAME: hostname,
        SYSLOG_IDENTIFIER: e.comm,
        _PID: String(e.pid),
        _COMM: e.comm,
        _SYSTEMD_UNIT: e.unit,
        UNIT: e.comm === "systemd" ? e.unit : undefined,
        MESSAGE: e.message,
        PRIORITY: "6",
      });
    default:
      return `${formatSyslogTime(d)}${host} ${ident}: ${e.message}`;
  }
}

function select(entries) {
  let list = entries.filter(
    (e) =>
      (since === undefined || e.t >= since) &&
      (until === undefined || e.t <= until) &&
      (grep === undefined || grep.test(e.message)),
  );
  if (opts.lines !== undefined && opts.lines !== "all") {
    if (opts.lines.startsWith("+")) list = list.slice(0, Number(opts.lines.slice(1)));
    else {
      const n = Number(opts.lines);
      list = n === 0 ? [] : list.slice(-n);
    }
  }
  if (opts.reverse) list = list.reverse();
  return list;
}

const initial = select(readEntries());
let output = initial.map(format).join("\n");
if (initial.length === 0) output = opts.quiet ? "" : "-- No entries --";
if (output !== "") process.stdout.write(`${output}\n`);

if (opts.follow) {
  // Keep printing new lines until killed (or the caller's session goes away).
  registerProcess(process.pid, "journalctl -f", root);
  const parent = process.ppid;
  let seen = readEntries().length;
  process.stdout.on("error", () => process.exit(0));
  for (;;) {
    await sleep(100);
    if (process.ppid !== parent) process.exit(0);
    const entries = readEntries().filter((e) => grep === undefined || grep.test(e.message));
    if (entries.length > seen) {
      const fresh = entries.slice(seen);
      seen = entries.length;
      process.stdout.write(`${fresh.map(format).join("\n")}\n`);
    }
  }
}
