import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { recordCallBash } from "./fast-path-bash.ts";
import { shQuote } from "./write-shim-wrapper.ts";

/** The real df, as shims/df.mjs finds it. */
const REAL_DF = existsSync("/usr/bin/df") ? "/usr/bin/df" : "/bin/df";

/**
 * `df` answered by the shim's bash wrapper where `shims/df.mjs` would answer the same without Node's help:
 *
 * - with neither disk fault set (`diskSizeBytes`, `diskFreeBytes` in state/faults.json), df.mjs runs the
 *   real df with the same arguments and prints what it prints: so does this (`exec -a df`), for any
 *   arguments made of plain characters;
 * - with `diskFreeBytes: N` (a whole number), the form the plan and disk retention ask,
 *   `df -B1 --output=avail <dir>` of an existing directory inside the sandbox: df.mjs prints the one
 *   column `Avail` and N, right-aligned to df's minimum width of 5 (coreutils df.c field_data) or N's.
 *
 * Each call is recorded as `recordCall` does. Anything else — `diskSizeBytes` (df.mjs then asks du), a
 * fault value that is not a whole number, another form with a fault set, a path outside the sandbox or
 * with `.`/`..` components — goes to Node. `test/testbench/df-fast-path.test.ts` compares both answers.
 */
export function dfFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  return `__ms_fast=1
for x in "$@"; do case "$x" in ''|*[!A-Za-z0-9@._:/=,+-]*) __ms_fast=0; break ;; esac; done
if [ "$__ms_fast" = 1 ]; then
free=; sized=0
if [ -r ${root}/state/faults.json ]; then
  while IFS= read -r l; do
    case $l in
      '  "diskFreeBytes": '*) l=\${l#*: }; free=\${l%,}; [ -n "$free" ] || free=bad ;;
      '  "diskSizeBytes": '*) sized=1 ;;
    esac
  done < ${root}/state/faults.json
fi
answer=
if [ "$sized" = 0 ] && [ -z "$free" ]; then answer=real
elif [ "$sized" = 0 ] && [ "$#" -eq 3 ] && [ "$1" = -B1 ] && [ "$2" = --output=avail ] && [ -e "$3" ]; then
  case $free in *[!0-9]*) ;; *) case $3 in ${root}|${root}/*) case $3 in */./*|*/.|*/../*|*/..|*//*) ;; *) answer=avail ;; esac ;; esac ;; esac
fi
if [ -n "$answer" ]; then
${recordCallBash(sandboxRoot, "df")}  [ "$answer" = real ] && exec -a df ${shQuote(REAL_DF)} "$@"
  w=\${#free}; [ "$w" -ge 5 ] || w=5
  printf '%*s\\n%*s\\n' "$w" Avail "$w" "$free"
  exit 0
fi
fi
`;
}
