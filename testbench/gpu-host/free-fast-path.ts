import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { ALIVE_BASH, JSON_MEMBERS_BASH, recordCallBash } from "./fast-path-bash.ts";
import { shQuote } from "./write-shim-wrapper.ts";

/** The real free, as shims/free.mjs finds it. */
const REAL_FREE = existsSync("/usr/bin/free") ? "/usr/bin/free" : "/bin/free";

/**
 * `free -b` (preflight's RAM check, src/plan/read-host-facts.ts) answered by the shim's bash wrapper,
 * without starting Node, as `shims/free.mjs` answers it:
 *
 * - without `hostMemGiB` in state/config.json (or 0), free.mjs runs the real free with the same arguments:
 *   so does this (`exec -a free`);
 * - with `hostMemGiB: N` (a whole number; the bench sets 1024), the Mem: row has a total of N GiB, used =
 *   this machine's MemTotal − MemAvailable (else MemFree) from /proc/meminfo plus the bytes live processes
 *   pinned (state/pinned/<pid>.json, sandbox.mjs registerPinnedMemory), at most the total; shared =
 *   Shmem, buff/cache = Buffers + Cached + SReclaimable, free = total − used − buff/cache, available =
 *   total − used (neither below 0); Swap: from SwapTotal and SwapFree; every figure in bytes, right-aligned
 *   in 12 columns, procps-ng 4.0's layout.
 *
 * Every other option, a hostMemGiB that is not a whole number, a pinned file that is not
 * `{ "bytes": <whole number> }` in writeJsonAtomic's layout (a parked vLLM pins a fractional figure),
 * config.json in another layout or an unreadable meminfo goes to Node. Each answered call is recorded as
 * `recordCall` does. MODELSWAP_SIM_MEMINFO, which free.mjs also reads, names another meminfo file: only
 * `test/testbench/free-fast-path.test.ts` sets it, to compare both answers on the same figures.
 */
export function freeFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  return `if [ "$#" -eq 1 ] && [ "$1" = -b ]; then
ok=1; mode=
${JSON_MEMBERS_BASH}${ALIVE_BASH}declare -A __C=()
json_members ${root}/state/config.json __C
if [ -z "\${__C[hostMemGiB]+x}" ]; then mode=real
elif [[ \${__C[hostMemGiB]} =~ ^[0-9]{1,6}$ ]]; then
  g=$((10#\${__C[hostMemGiB]})); if [ "$g" -gt 0 ]; then mode=sim; else mode=real; fi
else ok=0; fi
if [ "$ok" = 1 ] && [ "$mode" = real ]; then
${recordCallBash(sandboxRoot, "free")}  exec -a free ${shQuote(REAL_FREE)} "$@"
fi
if [ "$ok" = 1 ] && [ "$mode" = sim ]; then
  declare -A M=()
  re='^([A-Za-z0-9_]+(\\([A-Za-z0-9_]+\\))?):[[:space:]]+([0-9]+)'
  { while IFS= read -r l; do
    if [[ $l =~ $re ]]; then
      [ "\${#BASH_REMATCH[3]}" -le 15 ] || ok=0
      M[\${BASH_REMATCH[1]}]=$((10#\${BASH_REMATCH[3]:0:15} * 1024))
    fi
  done
  } 2>/dev/null < "\${MODELSWAP_SIM_MEMINFO:-/proc/meminfo}" || ok=0
  pin=0
  for f in ${root}/state/pinned/*.json; do
    [ "$ok" = 1 ] || break
    b=\${f##*/}; b=\${b%.json}
    [[ $b =~ ^[0-9]+$ ]] || continue
    [ "\${#b}" -le 9 ] || { ok=0; break; }
    alive "$((10#$b))" || continue
    L=(); { mapfile -t L < "$f"; } 2>/dev/null || continue
    [ "\${#L[@]}" -eq 3 ] && [ "\${L[0]}" = "{" ] && [ "\${L[2]}" = "}" ] &&
      [[ \${L[1]} =~ ^\\ {2}\\"bytes\\":\\ (0|[1-9][0-9]{0,15})$ ]] || { ok=0; break; }
    pin=$((pin + BASH_REMATCH[1]))
  done
fi
if [ "$ok" = 1 ] && [ "$mode" = sim ]; then
  t=$((g * 1073741824))
  a=\${M[MemAvailable]-\${M[MemFree]-0}}
  u=$((\${M[MemTotal]-0} - a)); [ "$u" -ge 0 ] || u=0
  u=$((u + pin)); [ "$u" -le "$t" ] || u=$t
  bc=$((\${M[Buffers]-0} + \${M[Cached]-0} + \${M[SReclaimable]-0}))
  fr=$((t - u - bc)); [ "$fr" -ge 0 ] || fr=0
  av=$((t - u)); [ "$av" -ge 0 ] || av=0
  st=\${M[SwapTotal]-0}; sf=\${M[SwapFree]-0}
  printf -v o ' %11s' "$t" "$u" "$fr" "\${M[Shmem]-0}" "$bc" "$av"
  printf -v s ' %11s' "$st" "$((st - sf))" "$sf"
${recordCallBash(sandboxRoot, "free")}  printf '               total        used        free      shared  buff/cache   available\\nMem:    %s\\nSwap:   %s\\n' "$o" "$s"
  exit 0
fi
fi
`;
}
