import { resolve } from "node:path";
import {
  ALIVE_BASH,
  JSON_MEMBERS_BASH,
  recordCallBash,
  UNIT_FILE_BASH,
  UNIT_NAME_BASH,
} from "./fast-path-bash.ts";
import { sandboxPaths } from "./shims/sandbox.mjs";
import { shQuote } from "./write-shim-wrapper.ts";

/**
 * The read-only `systemctl` forms a swap, preflight and the monitor ask many times a second, answered by the
 * shim's bash wrapper itself, without starting Node:
 *
 * - `systemctl is-active <unit>`. The health monitor asks it of every host every interval: at a thousand
 *   hosts every 15 s that is 67 calls a second, and the Node shim costs about 0.1–0.16 CPU s a call on the
 *   bench machine (it imports the whole systemctl emulation), which no 2-core machine can give. Exit 0 for
 *   `active`, 3 otherwise (systemctl(1): "is-active … Returns an exit code 0 if at least one is active, or
 *   non-zero otherwise"; systemd's LSB convention gives 3 for "not running").
 * - `systemctl show <unit>` asking only for MainPID, LoadState, ActiveState, SubState, FragmentPath and
 *   UnitFileState (`-p X`, `-pX`, `--property=X,Y`, with or without `--value`, in any order): the final
 *   check and the status probes ask it after every step, preflight (read-host-facts.ts) and the doctor
 *   before every plan. The properties come in systemd's order (systemctl-show.mjs's table), each once, as
 *   `Key=value` or the value alone; exit 0.
 * - `systemctl is-enabled <unit>` (disk retention): `enabled`, `static` or `disabled` (exit 1 for
 *   disabled), or, for a unit with no file, systemd's message on stderr and exit 1.
 *
 * The unit's state is read as `systemctl.mjs` reads it (`observedUnitState` in shims/units.mjs: a running
 * state whose supervisor and main process are both gone reads `inactive`/`dead` with no main PID; a
 * missing state file is a never-started unit; MainPID is 0 unless that process is alive). Its file, for
 * LoadState, FragmentPath, UnitFileState and is-enabled, as `resolveUnit` and unit-file.mjs read it:
 * `etc/systemd/system/<unit>` (none: not-found, ""), lines trimmed, comments skipped, continuation lines
 * joined; LoadState is `loaded` when the last ExecStart= of [Service] (an empty one resets the list)
 * holds a command, `bad-setting` otherwise; the unit is enabled while a `*.wants`/`*.requires` directory
 * holds a link of its name, else static without WantedBy=/RequiredBy= in [Install], else disabled. A file
 * the shell cannot read as surely — a character that is not printable ASCII outside comments, a quote or
 * backslash in an assignment (Environment= words could fail to parse), `%` or `$` in ExecStart=, the
 * fault `strictDaemonReload` — or a unit with no file but a loaded snapshot and a state (a running unit
 * keeps its loaded definition) goes to Node. The call is recorded in `state/calls.jsonl` as `recordCall`
 * does. Any other form — another option or property, several units, a character outside systemd's
 * unit-name set — falls through to Node. `test/testbench/systemctl-fast-path.test.ts` compares both
 * answers for every state.
 */
export function systemctlFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  const unitDir = shQuote(sandboxPaths(resolve(sandboxRoot)).unitDir);
  // bash builtins only (the wrapper is a bash script when this is in it): no process is started; the state
  // file is read line by line. Every argument is checked against the characters of unit names, options and
  // property lists first, so the call's JSON record needs no escaping.
  return `__ms_fast=1
for x in "$@"; do case "$x" in ''|*[!A-Za-z0-9@._:=,-]*) __ms_fast=0; break ;; esac; done
if [ "$__ms_fast" = 1 ] && { [ "$1" = is-active ] || [ "$1" = is-enabled ] || [ "$1" = show ]; }; then
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
  for p in $P; do case $p in MainPID|LoadState|ActiveState|SubState|FragmentPath|UnitFileState) want="$want $p" ;; *) ok=0 ;; esac; done
  [ -n "$want" ] || ok=0
fi
if [ "$ok" = 1 ]; then
${UNIT_NAME_BASH}found=0; fe=0; ins=0; lk=0
case "$verb $want " in is-enabled*|*" LoadState "*|*" FragmentPath "*|*" UnitFileState "*)
${JSON_MEMBERS_BASH}${UNIT_FILE_BASH}  declare -A __F=()
  json_members ${root}/state/faults.json __F
  f=${unitDir}/$u
  if [ -f "$f" ] && [ -r "$f" ]; then
    found=1
    [ -z "\${__F[strictDaemonReload]+x}" ] || ok=0
    [ "$ok" = 0 ] || unit_file "$f"
    shopt -s dotglob
    for e in ${unitDir}/*.wants ${unitDir}/*.requires; do
      if [ -L "$e/$u" ] || [ -e "$e/$u" ]; then lk=1; break; fi
    done
    shopt -u dotglob
  elif [ -e ${root}/state/loaded/$u.json ] && [ -e ${root}/state/units/$u.json ]; then ok=0
  fi ;;
esac
fi
if [ "$ok" = 1 ]; then
${recordCallBash(sandboxRoot, "systemctl")}lst=not-found; fp=; us=
if [ "$found" = 1 ]; then
  lst=bad-setting; [ "$fe" = 0 ] || lst=loaded
  fp=$f
  if [ "$lk" = 1 ]; then us=enabled; elif [ "$ins" = 0 ]; then us=static; else us=disabled; fi
fi
if [ "$verb" = is-enabled ]; then
  if [ "$found" = 0 ]; then printf 'Failed to get unit file state for %s: No such file or directory\\n' "$u" >&2; exit 1; fi
  printf '%s\\n' "$us"
  [ "$us" = disabled ] && exit 1
  exit 0
fi
a=inactive; s=dead; sp=0; mp=0
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
${ALIVE_BASH}case $a in active|activating|deactivating|reloading) alive "$sp" || alive "$mp" || { a=inactive; s=dead; mp=0; } ;; esac
if [ "$verb" = is-active ]; then
  printf '%s\\n' "$a"
  [ "$a" = active ] && exit 0
  exit 3
fi
alive "$mp" || mp=0
for p in MainPID LoadState ActiveState SubState FragmentPath UnitFileState; do
  case " $want " in *" $p "*) ;; *) continue ;; esac
  case $p in
    MainPID) x=$mp ;; LoadState) x=$lst ;; ActiveState) x=$a ;; SubState) x=$s ;; FragmentPath) x=$fp ;;
    UnitFileState) x=$us ;;
  esac
  if [ "$v" = 1 ]; then printf '%s\\n' "$x"; else printf '%s=%s\\n' "$p" "$x"; fi
done
exit 0
fi
fi
`;
}
