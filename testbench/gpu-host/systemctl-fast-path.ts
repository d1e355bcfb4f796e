import { resolve } from "node:path";
import { shQuote } from "./write-shim-wrapper.ts";

/**
 * `systemctl is-active <unit>` answered by the shim's bash wrapper itself, without starting Node.
 *
 * The health monitor asks it of every host every interval: at a thousand hosts every 15 s that is 67 calls a
 * second, and the Node shim costs about 0.1–0.16 CPU s a call on the bench machine (it imports the whole
 * systemctl emulation), which no 2-core machine can give. This answers the one form the monitor uses (one
 * unit, no options) with the same result as `systemctl.mjs` (`observedUnitState` in shims/units.mjs: a
 * running state whose supervisor and main process are both gone reads `inactive`; a missing state file is
 * a never-started unit, `inactive`), records the call in `state/calls.jsonl` as `recordCall` does, and
 * exits 0 for `active`, 3 otherwise (systemctl(1): "is-active … Returns an exit code 0 if at least one is
 * active, or non-zero otherwise"; systemd's LSB convention gives 3 for "not running"). Any other form — an
 * option, several units, a name with characters outside systemd's unit-name set — falls through to Node.
 * `test/testbench/systemctl-fast-path.test.ts` compares both answers for every state.
 */
export function systemctlIsActiveFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  // bash builtins only (the wrapper is a bash script when this is in it): no process is started. The
  // time is $EPOCHREALTIME's (bash 5) with printf's %()T; the state file is read line by line.
  return `if [ "$#" -eq 2 ] && [ "$1" = is-active ]; then case "$2" in ''|-*|*[!A-Za-z0-9@._:-]*) ;; *)
u=$2
case "$u" in *.service|*.socket|*.target|*.timer|*.mount|*.path|*.slice|*.scope|*.device|*.swap|*.automount) ;; *) u=$u.service ;; esac
t=$EPOCHREALTIME; ms=\${t#*.}; ms=\${ms:0:3}
TZ=UTC0 printf -v at '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "\${t%.*}" "$ms"
printf '{"at":"%s","cmd":"systemctl","argv":["is-active","%s"]}\\n' "$at" "$2" >> ${root}/state/calls.jsonl
a=inactive; sp=0; mp=0
f=${root}/state/units/$u.json
if [ -r "$f" ]; then
  while IFS= read -r l; do
    case $l in
      '  "activeState": "'*) l=\${l#*: \\"}; a=\${l%%\\"*} ;;
      '  "supervisorPid": '*) l=\${l#*: }; sp=\${l%,} ;;
      '  "mainPid": '*) l=\${l#*: }; mp=\${l%,} ;;
    esac
  done < "$f"
fi
alive() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ] && [ -r "/proc/$1/stat" ] && read -r l < "/proc/$1/stat" && l=\${l##*) } && [ "\${l%% *}" != Z ]; }
case $a in active|activating|deactivating|reloading) alive "$sp" || alive "$mp" || a=inactive ;; esac
printf '%s\\n' "$a"
[ "$a" = active ] && exit 0
exit 3
;; esac; fi
`;
}
