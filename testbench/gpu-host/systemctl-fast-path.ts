import { resolve } from "node:path";
import { recordCallBash, UNIT_NAME_BASH } from "./fast-path-bash.ts";
import { shQuote } from "./write-shim-wrapper.ts";

/**
 * The read-only `systemctl` forms a swap and the monitor ask many times a second, answered by the shim's
 * bash wrapper itself, without starting Node:
 *
 * - `systemctl is-active <unit>`. The health monitor asks it of every host every interval: at a thousand
 *   hosts every 15 s that is 67 calls a second, and the Node shim costs about 0.1–0.16 CPU s a call on the
 *   bench machine (it imports the whole systemctl emulation), which no 2-core machine can give. Exit 0 for
 *   `active`, 3 otherwise (systemctl(1): "is-active … Returns an exit code 0 if at least one is active, or
 *   non-zero otherwise"; systemd's LSB convention gives 3 for "not running").
 * - `systemctl show <unit>` asking only for MainPID, ActiveState and SubState (`-p X`, `-pX`,
 *   `--property=X,Y`, with or without `--value`, in any order): the final check and the status probes ask
 *   it after every step. The properties come in systemd's order (systemctl-show.mjs's table: MainPID before
 *   ActiveState before SubState), each once, as `Key=value` or the value alone; exit 0.
 *
 * Both read the unit's state as `systemctl.mjs` does (`observedUnitState` in shims/units.mjs: a running
 * state whose supervisor and main process are both gone reads `inactive`/`dead` with no main PID; a
 * missing state file is a never-started unit; MainPID is 0 unless that process is alive) and record the
 * call in `state/calls.jsonl` as `recordCall` does. Any other form — another option or property, several
 * units, a character outside systemd's unit-name set — falls through to Node.
 * `test/testbench/systemctl-fast-path.test.ts` compares both answers for every state.
 */
export function systemctlFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  // bash builtins only (the wrapper is a bash script when this is in it): no process is started; the state
  // file is read line by line. Every argument is checked against the characters of unit names, options and
  // property lists first, so the call's JSON record needs no escaping.
  return `__ms_fast=1
for x in "$@"; do case "$x" in ''|*[!A-Za-z0-9@._:=,-]*) __ms_fast=0; break ;; esac; done
if [ "$__ms_fast" = 1 ] && { [ "$1" = is-active ] || [ "$1" = show ]; }; then
verb=$1; u=; v=0; P=" "; ok=1; i=1; args=("$@")
while [ "$i" -lt "$#" ]; do
  x=\${args[$i]}
  case $verb:$x in
    show:--value) v=1 ;;
    show:-p|show:--property) i=$((i + 1)); [ "$i" -lt "$#" ] || { ok=0; break; }; y=\${args[$i]}; P="$P\${y//,/ } " ;;
    show:--property=*) y=\${x#--property=}; P="$P\${y//,/ } " ;;
    show:-p?*) y=\${x#-p}; P="$P\${y//,/ } " ;;
    *:-*) ok=0; break ;;
    *) [ -z "$u" ] || { ok=0; break; }; u=$x ;;
  esac
  i=$((i + 1))
done
[ -n "$u" ] || ok=0
case $u in *[=,]*) ok=0 ;; esac
want=
if [ "$verb" = show ]; then
  for p in $P; do case $p in MainPID|ActiveState|SubState) want="$want $p" ;; *) ok=0 ;; esac; done
  [ -n "$want" ] || ok=0
fi
if [ "$ok" = 1 ]; then
${UNIT_NAME_BASH}${recordCallBash(sandboxRoot, "systemctl")}a=inactive; s=dead; sp=0; mp=0
f=${root}/state/units/$u.json
if [ -r "$f" ]; then
  while IFS= read -r l; do
    case $l in
      '  "activeState": "'*) l=\${l#*: \\"}; a=\${l%%\\"*} ;;
      '  "subState": "'*) l=\${l#*: \\"}; s=\${l%%\\"*} ;;
      '  "supervisorPid": '*) l=\${l#*: }; sp=\${l%,} ;;
      '  "mainPid": '*) l=\${l#*: }; mp=\${l%,} ;;
    esac
  done < "$f"
fi
alive() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ] && [ -r "/proc/$1/stat" ] && read -r l < "/proc/$1/stat" && l=\${l##*) } && [ "\${l%% *}" != Z ]; }
case $a in active|activating|deactivating|reloading) alive "$sp" || alive "$mp" || { a=inactive; s=dead; mp=0; } ;; esac
if [ "$verb" = is-active ]; then
  printf '%s\\n' "$a"
  [ "$a" = active ] && exit 0
  exit 3
fi
alive "$mp" || mp=0
for p in MainPID ActiveState SubState; do
  case " $want " in *" $p "*) ;; *) continue ;; esac
  case $p in MainPID) x=$mp ;; ActiveState) x=$a ;; SubState) x=$s ;; esac
  if [ "$v" = 1 ]; then printf '%s\\n' "$x"; else printf '%s=%s\\n' "$p" "$x"; fi
done
exit 0
fi
fi
`;
}
