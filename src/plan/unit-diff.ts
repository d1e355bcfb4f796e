/**
 * A unified diff (`diff -u` format, 3 lines of context) of two small texts such as unit files: a
 * longest-common-subsequence line diff after trimming the common head and tail. `git apply` and
 * `patch` accept the output. Returns "" when the texts are equal.
 */

const CONTEXT = 3;
/** Above this many cells the LCS table is skipped and the changed middle is shown as replaced. */
const MAX_TABLE_CELLS = 4_000_000;
const NO_EOL = "\\ No newline at end of file";

type Op = { kind: " " | "-" | "+"; line: string };

/** Lines of a text; the last line of a text without a final newline is marked so it never equals one with it. */
function splitLines(text: string): { lines: string[]; noEol: boolean } {
  if (text === "") return { lines: [], noEol: false };
  const noEol = !text.endsWith("\n");
  const lines = (noEol ? text : text.slice(0, -1)).split("\n");
  return { lines, noEol };
}

function diffOps(a: readonly string[], b: readonly string[]): Op[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  const ops: Op[] = [];
  for (let i = 0; i < head; i++) ops.push({ kind: " ", line: a[i]! });
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const n = midA.length;
  const m = midB.length;
  if (n * m > MAX_TABLE_CELLS) {
    for (const line of midA) ops.push({ kind: "-", line });
    for (const line of midB) ops.push({ kind: "+", line });
  } else {
    // lcs[i][j] = LCS length of midA[i..] and midB[j..]
    const width = m + 1;
    const lcs = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * width + j] =
          midA[i] === midB[j]
            ? lcs[(i + 1) * width + j + 1]! + 1
            : Math.max(lcs[(i + 1) * width + j]!, lcs[i * width + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) {
        ops.push({ kind: " ", line: midA[i]! });
        i++;
        j++;
      } else if (j < m && (i === n || lcs[i * width + j + 1]! >= lcs[(i + 1) * width + j]!)) {
        ops.push({ kind: "+", line: midB[j]! });
        j++;
      } else {
        ops.push({ kind: "-", line: midA[i]! });
        i++;
      }
    }
  }
  for (let k = a.length - tail; k < a.length; k++) ops.push({ kind: " ", line: a[k]! });
  return deletionsFirst(ops);
}

/** Puts each run of changes in "-" then "+" order, as diff -u prints them. */
function deletionsFirst(ops: Op[]): Op[] {
  const to = ops.length;
  let k = 0;
  while (k < to) {
    if (ops[k]!.kind === " ") {
      k++;
      continue;
    }
    let end = k;
    while (end < to && ops[end]!.kind !== " ") end++;
    const run = ops.slice(k, end);
    const sorted = [...run.filter((op) => op.kind === "-"), ...run.filter((op) => op.kind === "+")];
    ops.splice(k, run.length, ...sorted);
    k = end;
  }
  return ops;
}

/** Lines of one side in ops: the old side skips "+", the new side skips "-". */
const count = (ops: readonly Op[], skip: Op["kind"]): number => ops.filter((op) => op.kind !== skip).length;

function range(start: number, count: number): string {
  const first = count === 0 ? start : start + 1;
  return count === 1 ? `${first}` : `${first},${count}`;
}

export function unifiedDiff(oldText: string, newText: string, oldName: string, newName: string): string {
  if (oldText === newText) return "";
  const oldSplit = splitLines(oldText);
  const newSplit = splitLines(newText);
  const marker = "\u0000<no newline>";
  const a = oldSplit.lines.map((l, i) =>
    oldSplit.noEol && i === oldSplit.lines.length - 1 ? l + marker : l,
  );
  const b = newSplit.lines.map((l, i) =>
    newSplit.noEol && i === newSplit.lines.length - 1 ? l + marker : l,
  );
  const ops = diffOps(a, b);

  const changed = ops.map((op, i) => (op.kind === " " ? -1 : i)).filter((i) => i >= 0);
  const hunks: [number, number][] = [];
  for (const index of changed) {
    const start = Math.max(0, index - CONTEXT);
    const end = Math.min(ops.length, index + CONTEXT + 1);
    const last = hunks.at(-1);
    if (last !== undefined && start <= last[1]) last[1] = Math.max(last[1], end);
    else hunks.push([start, end]);
  }

  const out = [`--- ${oldName}`, `+++ ${newName}`];
  for (const [start, end] of hunks) {
    const before = ops.slice(0, start);
    const slice = ops.slice(start, end);
    out.push(
      `@@ -${range(count(before, "+"), count(slice, "+"))} +${range(count(before, "-"), count(slice, "-"))} @@`,
    );
    for (const op of slice) {
      if (op.line.endsWith(marker)) out.push(`${op.kind}${op.line.slice(0, -marker.length)}`, NO_EOL);
      else out.push(`${op.kind}${op.line}`);
    }
  }
  return `${out.join("\n")}\n`;
}
