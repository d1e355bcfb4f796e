/**
 * tqdm-style progress bars of the simulated `hf` (stderr, `\r`-refreshed, as tqdm prints them when
 * stderr is not a terminal): `Fetching 8 files:  75%|███████▌  | 6/8 [00:10<00:03,  1.75s/it]`.
 * Not a command.
 */

const CHARSET = " ▏▎▍▌▋▊▉█";
const BAR_WIDTH = 10;

/** tqdm's format_interval. */
export function formatInterval(seconds) {
  const total = Math.floor(seconds);
  const mins = Math.floor(total / 60);
  const s = total % 60;
  const h = Math.floor(mins / 60);
  const m = mins % 60;
  const pad = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${pad(m)}:${pad(s)}` : `${pad(m)}:${pad(s)}`;
}

/** tqdm's format_sizeof (divisor 1000, "k" lowercase). */
export function formatSizeof(num, suffix = "") {
  let n = num;
  for (const unit of ["", "k", "M", "G", "T", "P", "E", "Z"]) {
    if (Math.abs(n) < 999.5) {
      if (Math.abs(n) < 99.95) {
        if (Math.abs(n) < 9.995) return `${n.toFixed(2)}${unit}${suffix}`;
        return `${n.toFixed(1)}${unit}${suffix}`;
      }
      return `${n.toFixed(0)}${unit}${suffix}`;
    }
    n /= 1000;
  }
  return `${n.toFixed(1)}Y${suffix}`;
}

function bar(frac) {
  const nsyms = CHARSET.length - 1;
  const filled = Math.floor(frac * BAR_WIDTH * nsyms);
  const full = Math.floor(filled / nsyms);
  const part = filled % nsyms;
  if (full >= BAR_WIDTH) return CHARSET[nsyms].repeat(BAR_WIDTH);
  return CHARSET[nsyms].repeat(full) + CHARSET[part] + CHARSET[0].repeat(BAR_WIDTH - full - 1);
}

/** tqdm's format_meter for the default bar format. */
export function formatMeter({ desc, n, total, elapsed, unit = "it", unitScale = false }) {
  const rate = elapsed > 0 && n > 0 ? n / elapsed : undefined;
  const fmt = (v) => (unitScale ? formatSizeof(v) : String(v));
  const invRate = rate ? 1 / rate : undefined;
  const rateNoInv = `${rate ? (unitScale ? formatSizeof(rate) : rate.toFixed(2).padStart(5)) : "?"}${unit}/s`;
  const rateInv = `${invRate ? (unitScale ? formatSizeof(invRate) : invRate.toFixed(2).padStart(5)) : "?"}s/${unit}`;
  const rateFmt = invRate && invRate > 1 ? rateInv : rateNoInv;
  const prefix = desc ? `${desc}: ` : "";
  if (!total) return `${prefix}${fmt(n)}${unit} [${formatInterval(elapsed)}, ${rateFmt}]`;
  const frac = Math.min(1, n / total);
  const remaining = rate ? formatInterval((total - n) / rate) : "?";
  const pct = `${Math.round(frac * 100)}`.padStart(3);
  return `${prefix}${pct}%|${bar(frac)}| ${fmt(n)}/${fmt(total)} [${formatInterval(elapsed)}<${remaining}, ${rateFmt}]`;
}

/** A progress bar on stderr; all methods are no-ops when disabled. */
export class ProgressBar {
  constructor({ desc, total, unit = "it", unitScale = false, disabled = false, minIntervalMs = 100 }) {
    this.desc = desc;
    this.total = total;
    this.unit = unit;
    this.unitScale = unitScale;
    this.disabled = disabled;
    this.minIntervalMs = minIntervalMs;
    this.n = 0;
    this.start = Date.now();
    this.lastPrint = 0;
    this.lastLength = 0;
    this.closed = false;
    this.render(true);
  }

  update(delta) {
    this.n += delta;
    this.render(false);
  }

  render(force) {
    if (this.disabled || this.closed) return;
    const now = Date.now();
    if (!force && now - this.lastPrint < this.minIntervalMs) return;
    this.lastPrint = now;
    const line = formatMeter({
      desc: this.desc,
      n: this.n,
      total: this.total,
      elapsed: (now - this.start) / 1000,
      unit: this.unit,
      unitScale: this.unitScale,
    });
    process.stderr.write(`\r${line}${" ".repeat(Math.max(0, this.lastLength - line.length))}`);
    this.lastLength = line.length;
  }

  close() {
    if (this.disabled || this.closed) return;
    this.render(true);
    this.closed = true;
    process.stderr.write("\n");
  }
}
