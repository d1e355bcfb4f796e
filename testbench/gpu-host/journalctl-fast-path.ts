import { resolve } from "node:path";
import { recordCallBash, UNIT_NAME_BASH } from "./fast-path-bash.ts";
import { shQuote } from "./write-shim-wrapper.ts";

/**
 * `journalctl -u <unit> -n <N> --no-pager -o cat` answered by the shim's bash wrapper, without starting Node.
 *
 * A swap's health wait reads the new unit's last 200 journal lines on every poll, twice a second, to fail
 * fast on a traceback (jobs/swap/stages/wait-healthy.ts); in two swap test files that was 126 of the 500
 * Node shim calls, each 30–90 ms of CPU on the bench machine, and the suite is CPU-bound on two cores.
 * This answers that one form exactly as `shims/journalctl.mjs` does: the unit's journal file
 * (`state/journal/<unit>.log`, lines `ISO-time\tpid\tcomm\tmessage`, written by `appendJournal` in
 * shims/sandbox.mjs) in time order (a stable sort on the ISO time, which `toISOString` writes at a fixed
 * width, so bytes order as times do), lines of fewer than four fields skipped, the last N messages, and
 * `-- No entries --` when none is selected. The call is recorded in `state/calls.jsonl` as `recordCall`
 * does. Every other form — another order of the options, a glob, a name outside systemd's unit-name
 * characters — falls through to Node. `test/testbench/journalctl-fast-path.test.ts` compares both answers.
 */
export function journalctlTailFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  return `if [ "$#" -eq 7 ] && [ "$1" = -u ] && [ "$3" = -n ] && [ "$5" = --no-pager ] && [ "$6" = -o ] && [ "$7" = cat ]; then case "$2" in ''|-*|*[!A-Za-z0-9@._:-]*) ;; *) case "$4" in ''|*[!0-9]*) ;; *)
u=$2
${UNIT_NAME_BASH}${recordCallBash(sandboxRoot, "journalctl")}f=${root}/state/journal/$u.log
if [ -r "$f" ]; then
  LC_ALL=C sort -s -t "$(printf '\\t')" -k1,1 -- "$f" | LC_ALL=C awk -F '\\t' -v n="$4" '
    NF >= 4 { r = $0; for (k = 0; k < 3; k++) r = substr(r, index(r, "\\t") + 1); m[c++] = r }
    END {
      if (c == 0 || n == 0) { print "-- No entries --"; exit }
      s = c - n; if (s < 0) s = 0
      o = m[s]; for (j = s + 1; j < c; j++) o = o "\\n" m[j]
      if (o != "") print o
    }'
else
  printf -- '-- No entries --\\n'
fi
exit 0
;; esac ;; esac; fi
`;
}
