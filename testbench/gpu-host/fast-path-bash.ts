import { resolve } from "node:path";
import { shQuote } from "./write-shim-wrapper.ts";

/*
 * The bash the shim wrappers' fast paths share (systemctl-, journalctl- and df-fast-path.ts): bash builtins
 * only, so an answer the wrapper gives itself starts no process.
 */

/**
 * Appends the call to the sandbox's `state/calls.jsonl` as shims/sandbox.mjs's `recordCall` does:
 * `{"at":ISO,"cmd":<cmd>,"argv":[every argument]}`. The time is $EPOCHREALTIME's (bash 5) with printf's
 * %()T. The arguments are written unescaped: call it only after every one was checked to hold no `"`,
 * `\` or control character.
 */
export function recordCallBash(sandboxRoot: string, cmd: string): string {
  return `t=$EPOCHREALTIME; ms=\${t#*.}; ms=\${ms:0:3}
TZ=UTC0 printf -v at '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "\${t%.*}" "$ms"
j=; for x in "$@"; do j="$j\${j:+,}\\"$x\\""; done
printf '{"at":"%s","cmd":"${cmd}","argv":[%s]}\\n' "$at" "$j" >> ${shQuote(resolve(sandboxRoot))}/state/calls.jsonl
`;
}

/** The unit name in the variable `u` as systemd reads one (shims/units.mjs normalizeUnitName): `x` is `x.service`. */
export const UNIT_NAME_BASH =
  'case "$u" in *.service|*.socket|*.target|*.timer|*.mount|*.path|*.slice|*.scope|*.device|*.swap|*.automount) ;; *) u=$u.service ;; esac\n';

/**
 * `alive PID`: true while the process exists and is not a zombie, as `isAlive` in shims/sandbox.mjs decides
 * (a whole number above 0 whose /proc/<pid>/stat reads a state other than Z or X). A process that ends
 * while it is read is not alive, and says nothing on stderr.
 */
export const ALIVE_BASH = `alive() { local l; [[ $1 =~ ^[0-9]{1,9}$ ]] && [ "$1" -gt 0 ] && { read -r l < "/proc/$1/stat"; } 2>/dev/null && l=\${l##*) } && [ "\${l%% *}" != Z ] && [ "\${l%% *}" != X ]; }
`;

/**
 * `json_members FILE NAME`: the top-level members of a JSON object file as `writeJsonAtomic` writes it
 * (JSON.stringify with an indent of 2: `{`, each member on a line of its own beginning `  "key": `, `}`;
 * `{}` when empty) into the associative array NAME: key → the value's text to the end of that line, less a
 * trailing comma (a value spanning lines is its opening `{` or `[`). A missing or empty file is an empty
 * object, as readJsonFile's fallback; a file in any other layout (compact JSON, say) sets `ok=0` and the
 * fast path leaves the call to Node.
 */
export const JSON_MEMBERS_BASH = `json_members() {
  local -n __m=$2
  local l k first=1
  __m=()
  [ -e "$1" ] || return 0
  { while IFS= read -r l || [ -n "$l" ]; do
    if [ "$first" = 1 ]; then
      first=0
      [ "$l" = "{}" ] && return 0
      [ "$l" = "{" ] || { ok=0; return 0; }
      continue
    fi
    case $l in
      '  "'*'": '*) k=\${l#'  "'}; k=\${k%%'": '*}; l=\${l#*'": '}; __m[$k]=\${l%,} ;;
    esac
  done 2>/dev/null < "$1"; } || ok=0
  return 0
}
`;

/**
 * `unit_file FILE`: what `systemctl show`'s LoadState and UnitFileState need of a unit file, read as
 * shims/unit-file.mjs reads it (parseUnitText, interpretUnit): lines trimmed, `#`/`;` comments skipped, a
 * trailing backslash joining the next line (comment lines between skipped), `[Section]` headers,
 * `key=value` assignments trimmed. Sets `fe=1` when the last ExecStart= of [Service] (an empty assignment
 * empties the list) holds a command — after its `-@:+!` prefixes, anything but blanks — and `ins=1` when
 * [Install] has a WantedBy= or RequiredBy= that names something. Where the shell could read the file
 * otherwise than unit-file.mjs — a character outside printable ASCII and tab (trimmed CR and the comments
 * aside), a quote or backslash in an assignment (Environment= words, quoted ExecStart= words), `%` or
 * `$` in the ExecStart= used (specifiers, variables that may expand to nothing) — it sets `ok=0`.
 */
export const UNIT_FILE_BASH = `unit_file() {
  local L l x k val sec= hs=0 es= esn=0 i=0 n
  fe=0; ins=0
  { mapfile -t L < "$1"; } 2>/dev/null || { ok=0; return 0; }
  L+=("")
  n=\${#L[@]}
  while [ "$i" -lt "$n" ]; do
    l=\${L[i]}; i=$((i + 1))
    l=\${l#"\${l%%[!$' \\t\\r']*}"}; l=\${l%"\${l##*[!$' \\t\\r']}"}
    case $l in ''|'#'*|';'*) continue ;; esac
    case $l in *[![:print:]$'\\t']*|*[![:ascii:]]*) ok=0; return 0 ;; esac
    if [[ $l == '['*']' ]]; then sec=\${l:1:\${#l}-2}; hs=1; continue; fi
    while [[ $l == *'\\' ]] && [ "$i" -lt "$n" ]; do
      l=\${l%'\\'}
      x=\${L[i]}; i=$((i + 1)); x=\${x#"\${x%%[!$' \\t\\r']*}"}; x=\${x%"\${x##*[!$' \\t\\r']}"}
      while [[ $x == [#\\;]* ]] && [ "$i" -lt "$n" ]; do
        x=\${L[i]}; i=$((i + 1)); x=\${x#"\${x%%[!$' \\t\\r']*}"}; x=\${x%"\${x##*[!$' \\t\\r']}"}
      done
      [[ $x == [#\\;]* ]] && x=
      case $x in *[![:print:]$'\\t']*|*[![:ascii:]]*) ok=0; return 0 ;; esac
      l="$l $x"
    done
    [[ $l == *'\\' ]] && l=\${l%'\\'}
    [ "$hs" = 1 ] || continue
    [[ $l == *=* ]] || continue
    case $l in *[\\"\\'\\\\]*) ok=0; return 0 ;; esac
    k=\${l%%=*}; val=\${l#*=}
    k=\${k#"\${k%%[![:blank:]]*}"}; k=\${k%"\${k##*[![:blank:]]}"}
    val=\${val#"\${val%%[![:blank:]]*}"}; val=\${val%"\${val##*[![:blank:]]}"}
    case $sec:$k in
      Service:ExecStart) if [ -z "$val" ]; then es=; esn=0; else es=$val; esn=1; fi ;;
      Install:WantedBy|Install:RequiredBy) [[ $val == *[![:blank:]]* ]] && ins=1 ;;
    esac
  done
  if [ "$esn" = 1 ]; then
    case $es in *[%$]*) ok=0; return 0 ;; esac
    while [[ $es == [-@:+!]* ]]; do es=\${es:1}; done
    [[ $es == *[![:blank:]]* ]] && fe=1
  fi
  return 0
}
`;
