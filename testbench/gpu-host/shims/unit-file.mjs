/**
 * systemd unit file parsing for the simulated host (not a command itself): the INI syntax of
 * systemd.syntax(7) with line continuations and comments, the word splitting and quoting of
 * systemd.service(5) "Command lines", Environment= assignments and ${VAR}/$VAR expansion.
 */
import { readFileSync, statSync } from "node:fs";

/**
 * Parses unit file text into { sections: { [section]: { [key]: string[] } } } keeping every
 * assignment of a key in order (an empty assignment is kept as "" so callers can reset lists).
 */
export function parseUnitText(text) {
  const sections = {};
  let current = null;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i].trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    if (line.startsWith("[") && line.endsWith("]")) {
      current = line.slice(1, -1);
      sections[current] ??= {};
      continue;
    }
    // Continuation: a trailing backslash joins the next line; comment lines in between are skipped.
    while (line.endsWith("\\") && i + 1 < lines.length) {
      line = line.slice(0, -1);
      let next = lines[++i].trim();
      while ((next.startsWith("#") || next.startsWith(";")) && i + 1 < lines.length) next = lines[++i].trim();
      if (next.startsWith("#") || next.startsWith(";")) next = "";
      line = `${line} ${next}`;
    }
    if (line.endsWith("\\")) line = line.slice(0, -1);
    const eq = line.indexOf("=");
    if (eq < 0 || current === null) continue;
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    sections[current][key] ??= [];
    sections[current][key].push(value);
  }
  return { sections };
}

const C_ESCAPES = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  f: "\f",
  v: "\v",
  "\\": "\\",
  '"': '"',
  "'": "'",
  s: " ",
};

/**
 * Splits a value into words like systemd's extract_first_word() with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE:
 * whitespace separates words, "..." and '...' group, backslash escapes (C-style) apply.
 * Returns [{ text, quoted }] where `quoted` tells whether any part of the word was quoted.
 */
export function splitWords(value) {
  const words = [];
  let i = 0;
  const n = value.length;
  while (i < n) {
    while (i < n && /\s/.test(value[i])) i++;
    if (i >= n) break;
    let text = "";
    let quoted = false;
    while (i < n && !/\s/.test(value[i])) {
      const ch = value[i];
      if (ch === '"' || ch === "'") {
        quoted = true;
        const quote = ch;
        i++;
        while (i < n && value[i] !== quote) {
          if (value[i] === "\\" && i + 1 < n) {
            const esc = value[i + 1];
            text += C_ESCAPES[esc] ?? esc;
            i += 2;
          } else {
            text += value[i++];
          }
        }
        if (i >= n) throw new Error(`unbalanced quotes in: ${value}`);
        i++;
      } else if (ch === "\\" && i + 1 < n) {
        const esc = value[i + 1];
        text += C_ESCAPES[esc] ?? esc;
        i += 2;
      } else {
        text += ch;
        i++;
      }
    }
    words.push({ text, quoted });
  }
  return words;
}

/** Parses Environment= values (each may hold several quoted K=V words) into an ordered object. */
export function parseEnvironment(values) {
  const env = {};
  for (const value of values) {
    if (value === "") {
      for (const key of Object.keys(env)) delete env[key];
      continue;
    }
    for (const { text } of splitWords(value)) {
      const eq = text.indexOf("=");
      if (eq <= 0) continue;
      env[text.slice(0, eq)] = text.slice(eq + 1);
    }
  }
  return env;
}

/** Reads an EnvironmentFile= (KEY=VALUE lines, # comments, optional quotes). */
export function parseEnvironmentFileText(text) {
  const env = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    const key = line
      .slice(0, eq)
      .trim()
      .replace(/^export\s+/, "");
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) {
      value = value.slice(1, -1);
    }
    env[key] = value;
  }
  return env;
}

/** Expands unit specifiers (%n %N %p %i %h %t %%) in a string. */
export function expandSpecifiers(text, unitName) {
  const base = unitName.replace(/\.service$/, "");
  const at = base.indexOf("@");
  return text.replace(/%([%nNpiIhtu])/g, (_m, c) => {
    switch (c) {
      case "%":
        return "%";
      case "n":
        return unitName;
      case "N":
        return base;
      case "p":
        return at >= 0 ? base.slice(0, at) : base;
      case "i":
      case "I":
        return at >= 0 ? base.slice(at + 1) : "";
      case "h":
        return process.env.HOME ?? "/root";
      case "t":
        return "/run";
      case "u":
        return "root";
      default:
        return "";
    }
  });
}

/**
 * Parses one ExecStart=-style command line: optional prefixes (- @ + ! !! :), words with
 * systemd quoting, ${VAR} expansion inside words and $VAR as a whole word split on whitespace.
 * Returns { path, argv, ignoreErrors, raw } (argv[0] is what the process sees as its argv[0]).
 */
export function parseCommandLine(value, env = {}, unitName = "unit.service") {
  let rest = value.trim();
  let ignoreErrors = false;
  let separateArgv0 = false;
  let noEnvExpand = false;
  for (;;) {
    if (rest.startsWith("-")) ignoreErrors = true;
    else if (rest.startsWith("@")) separateArgv0 = true;
    else if (rest.startsWith(":")) noEnvExpand = true;
    else if (rest.startsWith("+") || rest.startsWith("!")) {
      // privilege prefixes: no effect in the sandbox
    } else break;
    rest = rest.slice(1);
  }
  const words = splitWords(expandSpecifiers(rest, unitName));
  const out = [];
  for (const { text, quoted } of words) {
    if (noEnvExpand) {
      out.push(text);
      continue;
    }
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(text);
    if (whole && !quoted) {
      const v = env[whole[1]] ?? "";
      for (const part of v.split(/\s+/)) if (part !== "") out.push(part);
      continue;
    }
    out.push(
      text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name) => env[name] ?? "").replace(/\$\$/g, "$"),
    );
  }
  if (out.length === 0) throw new Error(`empty command line: ${value}`);
  const path = out[0];
  const argv = separateArgv0 ? out.slice(1) : out;
  return { path, argv, ignoreErrors, raw: value };
}

function last(values) {
  return values && values.length > 0 ? values[values.length - 1] : undefined;
}

/** Parses a time span like "10", "10s", "100ms", "1min 30s", "infinity" into milliseconds. */
export function parseTimeSpanMs(text) {
  if (text === undefined || text === "") return undefined;
  if (text === "infinity") return Number.POSITIVE_INFINITY;
  const units = {
    us: 0.001,
    ms: 1,
    s: 1000,
    sec: 1000,
    m: 60_000,
    min: 60_000,
    h: 3_600_000,
    hr: 3_600_000,
    d: 86_400_000,
  };
  let total = 0;
  let matched = false;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)\s*([a-z]*)/g)) {
    matched = true;
    const factor = m[2] === "" ? 1000 : units[m[2]];
    if (factor === undefined) return undefined;
    total += Number(m[1]) * factor;
  }
  return matched ? total : undefined;
}

/** Formats milliseconds the way systemd prints time spans ("100ms", "10s", "1min 30s", "infinity"). */
export function formatTimeSpan(ms) {
  if (ms === undefined) return "";
  if (!Number.isFinite(ms)) return "infinity";
  if (ms === 0) return "0";
  const parts = [];
  let rest = Math.round(ms);
  for (const [unit, size] of [
    ["h", 3_600_000],
    ["min", 60_000],
    ["s", 1000],
    ["ms", 1],
  ]) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join(" ");
}

/**
 * Reads and interprets a service unit. Returns null when the file does not exist.
 * Result: { name, path, text, mtimeMs, description, type, execStart, execStartPre[], environment,
 *   workingDirectory, restart, restartMs, timeoutStartMs, timeoutStopMs, user, wantedBy[], requiredBy[],
 *   hasInstall, sections }. execStart is null when the unit has none (a bad unit).
 */
export function loadUnitFile(path, name) {
  let text;
  let mtimeMs;
  try {
    text = readFileSync(path, "utf8");
    mtimeMs = statSync(path).mtimeMs;
  } catch {
    return null;
  }
  return interpretUnit(text, path, name, mtimeMs);
}

/** Interprets unit text (see loadUnitFile). */
export function interpretUnit(text, path, name, mtimeMs = 0) {
  const { sections } = parseUnitText(text);
  const unit = sections.Unit ?? {};
  const service = sections.Service ?? {};
  const install = sections.Install ?? {};
  const environment = parseEnvironment(service.Environment ?? []);
  const environmentFiles = [];
  for (const value of service.EnvironmentFile ?? []) {
    if (value === "") continue;
    const optional = value.startsWith("-");
    environmentFiles.push({ path: optional ? value.slice(1) : value, optional });
  }
  const fileEnv = {};
  for (const file of environmentFiles) {
    try {
      Object.assign(fileEnv, parseEnvironmentFileText(readFileSync(file.path, "utf8")));
    } catch {
      // missing EnvironmentFile: reported by the supervisor when not optional
    }
  }
  // systemd.exec(5), EnvironmentFile=: "Settings from these files override settings made with
  // Environment=" (several files: the later one wins). Environment= lines accumulate in order and an
  // empty one resets the list (parseEnvironment).
  const fullEnv = { ...environment, ...fileEnv };
  const commands = (key) => {
    const list = [];
    for (const value of service[key] ?? []) {
      if (value === "") list.length = 0;
      else list.push(value);
    }
    return list;
  };
  const execStartLines = commands("ExecStart");
  const execStartRaw = execStartLines[execStartLines.length - 1];
  let execStart = null;
  let parseError = null;
  try {
    execStart = execStartRaw === undefined ? null : parseCommandLine(execStartRaw, fullEnv, name);
  } catch (error) {
    parseError = String(error.message ?? error);
  }
  const execStartPre = [];
  for (const raw of commands("ExecStartPre")) {
    try {
      execStartPre.push(parseCommandLine(raw, fullEnv, name));
    } catch (error) {
      parseError = String(error.message ?? error);
    }
  }
  const splitList = (values) => (values ?? []).flatMap((v) => v.split(/\s+/)).filter((v) => v !== "");
  const timeoutAll = parseTimeSpanMs(last(service.TimeoutSec));
  return {
    name,
    path,
    text,
    mtimeMs,
    sections,
    description: last(unit.Description) ?? "",
    type: last(service.Type) ?? "simple",
    execStart,
    execStartRaw,
    execStartPre,
    parseError,
    environment,
    environmentFiles,
    fullEnvironment: fullEnv,
    workingDirectory: last(service.WorkingDirectory),
    user: last(service.User),
    restart: last(service.Restart) ?? "no",
    restartMs: parseTimeSpanMs(last(service.RestartSec)) ?? 100,
    timeoutStartMs: parseTimeSpanMs(last(service.TimeoutStartSec)) ?? timeoutAll ?? 90_000,
    timeoutStopMs: parseTimeSpanMs(last(service.TimeoutStopSec)) ?? timeoutAll ?? 90_000,
    wantedBy: splitList(install.WantedBy),
    requiredBy: splitList(install.RequiredBy),
    hasInstall: splitList(install.WantedBy).length + splitList(install.RequiredBy).length > 0,
  };
}
