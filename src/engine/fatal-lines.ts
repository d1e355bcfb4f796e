/**
 * Recognises, in a serving unit's journal, the lines that make waiting for `/health` pointless: the
 * engine crashed (a Python traceback, CUDA out of memory, no room for the KV cache), it refused its
 * command line (argparse), systemd could not even start it (203/EXEC), or it is serving NaN logits
 * ("Detected errors during sampling"). The health stage stops polling on the first such line.
 */

export type FatalKind = "traceback" | "oom" | "sampling" | "exec" | "other";

export interface FatalLine {
  /** The line an operator should read first (for a traceback: its exception line). */
  line: string;
  kind: FatalKind;
  /**
   * A traceback whose exception line is not in the excerpt yet: journald receives it line by line, so a
   * read can land mid-traceback. Its cause is still coming; the caller may read again before reporting.
   */
  unended?: true;
}

interface Finding extends FatalLine {
  /** Higher is more telling; the highest wins, then the earliest. */
  rank: number;
  index: number;
}

/** `journalctl -o short…` prefix: `Nov 29 23:33:35 gpu-1 python[1234]: `. */
const JOURNAL_PREFIX =
  /^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ [^\s:]+(?:\[\d+\])?: /;

/** The final line of a Python traceback: `ValueError: …`, `torch.OutOfMemoryError: …`, `KeyError`. */
const EXCEPTION_LINE = /^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Fault)\b(?::|$)/;

const OOM =
  /CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|Not enough memory\. Please try to increase --mem-fraction-static/;

const CHAINED =
  /^(?:During handling of the above exception, another exception occurred:|The above exception was the direct cause of the following exception:)/;

/** Removes a journal prefix (when the caller read the journal in a `short` format) and trailing blanks. */
function message(line: string): string {
  return line.replace(JOURNAL_PREFIX, "").trimEnd();
}

/**
 * The most telling fatal line of a journal excerpt, or undefined when nothing in it says the engine
 * cannot come up. A traceback is reported by its exception line (`ValueError: …`), and counts as
 * `oom` when that exception is CUDA running out of memory. systemd's own `Failed with result` line
 * is reported only when nothing better explains the failure.
 */
export function findFatalLine(journalLines: readonly string[]): FatalLine | undefined {
  const lines = journalLines.map(message);
  const findings: Finding[] = [];
  const add = (index: number, line: string, kind: FatalKind, rank: number, unended?: true) =>
    findings.push({ index, line, kind, rank, ...(unended ? { unended } : {}) });

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (line.includes("Traceback (most recent call last)")) {
      const end = tracebackEnd(lines, i);
      const exception = end === undefined ? undefined : lines[end];
      if (exception === undefined) add(i, line, "traceback", 3, true);
      else add(i, exception, OOM.test(exception) ? "oom" : "traceback", OOM.test(exception) ? 5 : 4);
      if (end !== undefined) i = end;
      continue;
    }
    if (OOM.test(line)) add(i, line, "oom", 5);
    else if (line.includes("Detected errors during sampling")) add(i, line, "sampling", 4);
    else if (/^[\w.-]+: error: /.test(line)) add(i, line, "other", 4);
    else if (/^RuntimeError: /.test(line)) add(i, line, "other", 4);
    else if (
      /Failed at step EXEC spawning|Unable to locate executable|Failed to locate executable/.test(line)
    )
      add(i, line, "exec", 4);
    else if (/status=203\/EXEC/.test(line)) add(i, line, "exec", 3);
    else if (/: Failed with result '/.test(line)) add(i, line, "other", 1);
  }
  let best: Finding | undefined;
  for (const f of findings) if (best === undefined || f.rank > best.rank) best = f;
  if (best === undefined) return undefined;
  const { line, kind, unended } = best;
  return unended ? { line, kind, unended } : { line, kind };
}

/**
 * Index of the exception line that ends the traceback starting at `start` (following chained
 * exceptions to the last one), or undefined when the excerpt stops before it.
 */
function tracebackEnd(lines: readonly string[], start: number): number | undefined {
  let last: number | undefined;
  for (let j = start + 1; j < Math.min(lines.length, start + 400); j++) {
    const line = lines[j] ?? "";
    if (EXCEPTION_LINE.test(line)) {
      last = j;
      // A chained exception continues with another traceback; the last exception is the one raised.
      const next = nextNonBlank(lines, j + 1);
      if (next !== undefined && CHAINED.test(lines[next] ?? "")) {
        j = next;
        continue;
      }
      return last;
    }
  }
  return last;
}

function nextNonBlank(lines: readonly string[], from: number): number | undefined {
  for (let j = from; j < lines.length; j++) if ((lines[j] ?? "").trim() !== "") return j;
  return undefined;
}
