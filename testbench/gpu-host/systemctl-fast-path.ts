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
 * - `systemctl show <unit>` asking only for MainPID, Result, NRestarts, ExecMainStartTimestamp, Id,
 *   LoadState, ActiveState, SubState, FragmentPath, UnitFileState and ActiveEnterTimestamp (`-p X`, `-pX`,
 *   `--property=X,Y`, with or without `--value`, in any order): the final check and the status probes ask
 *   it after every step, preflight (read-host-facts.ts) and the doctor before every plan, /status and the
 *   fleet page for every host (src/status/systemd-show.ts). The properties come in systemd's order
 *   (systemctl-show.mjs's table), each once, as `Key=value` or the value alone; exit 0. Result, NRestarts
 *   and the two times are the state file's members as show prints them (jstr, jts below).
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
/** The properties `show` answers, in systemctl-show.mjs's order (systemd's). */
const PROPERTIES = [
  "MainPID",
  "Result",
  "NRestarts",
  "ExecMainStartTimestamp",
  "Id",
  "LoadState",
  "ActiveState",
  "SubState",
  "FragmentPath",
  "UnitFileState",
  "ActiveEnterTimestamp",
];

/**
 * `jstr KEY`: `r` = the unit state's member KEY as systemctl-show.mjs prints it (`${value}`: a string as
 * is, null, true, false, a whole number, `undefined` when missing); `jts KEY`: `ts` = units.mjs
 * formatTimestamp of it ("Sun 2026-11-29 22:19:18 UTC", "" for none), the weekday by Sakamoto's rule. A
 * value the shell cannot print as surely (an escape, another number, an object, a time that is not
 * toISOString's from 1970 on) sets ok=0.
 */
const STATE_VALUES_BASH = `jstr() {
  if [ -z "\${__S[$1]+x}" ]; then r=undefined; return 0; fi
  r=\${__S[$1]}
  case $r in
    '"'*'"') case $r in *\\\\*) ok=0 ;; esac; r=\${r:1:\${#r}-2} ;;
    null|true|false) ;;
    *) [[ $r =~ ^(0|-?[1-9][0-9]{0,14})$ ]] || ok=0 ;;
  esac
  return 0
}
jts() {
  ts=
  [ -n "\${__S[$1]+x}" ] || return 0
  local v=\${__S[$1]} y mo d dim t yy w W
  case $v in null|false|0|'""') return 0 ;; '"'*'"') v=\${v:1:\${#v}-2} ;; *) ok=0; return 0 ;; esac
  [[ $v =~ ^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})([.][0-9]{3})?Z$ ]] || { ok=0; return 0; }
  y=$((10#\${BASH_REMATCH[1]})); mo=$((10#\${BASH_REMATCH[2]})); d=$((10#\${BASH_REMATCH[3]}))
  dim=(31 28 31 30 31 30 31 31 30 31 30 31)
  if ((y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))); then dim[1]=29; fi
  if ((y < 1970 || mo < 1 || mo > 12 || d < 1 || d > dim[mo - 1] || 10#\${BASH_REMATCH[4]} > 23 ||
    10#\${BASH_REMATCH[5]} > 59 || 10#\${BASH_REMATCH[6]} > 59)); then ok=0; return 0; fi
  t=(0 3 2 5 0 3 5 1 4 6 2 4); yy=$y; ((mo >= 3)) || yy=$((y - 1))
  w=$(((yy + yy / 4 - yy / 100 + yy / 400 + t[mo - 1] + d) % 7)); W=(Sun Mon Tue Wed Thu Fri Sat)
  ts="\${W[w]} \${BASH_REMATCH[1]}-\${BASH_REMATCH[2]}-\${BASH_REMATCH[3]} \${BASH_REMATCH[4]}:\${BASH_REMATCH[5]}:\${BASH_REMATCH[6]} UTC"
  return 0
}
`;

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
  for p in $P; do case $p in ${PROPERTIES.join("|")}) want="$want $p" ;; *) ok=0 ;; esac; done
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
res=success; nr=0; xs=; ae=
case " $want " in *" Result "*|*" NRestarts "*|*" ExecMainStartTimestamp "*|*" ActiveEnterTimestamp "*)
${JSON_MEMBERS_BASH}${STATE_VALUES_BASH}  declare -A __S=()
  if [ -s ${root}/state/units/$u.json ]; then
    json_members ${root}/state/units/$u.json __S
    jstr result; res=$r; jstr nRestarts; nr=$r
    jts execMainStartAt; xs=$ts; jts activeEnterAt; ae=$ts
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
for p in ${PROPERTIES.join(" ")}; do
  case " $want " in *" $p "*) ;; *) continue ;; esac
  case $p in
    MainPID) x=$mp ;; Result) x=$res ;; NRestarts) x=$nr ;; ExecMainStartTimestamp) x=$xs ;; Id) x=$u ;;
    LoadState) x=$lst ;; ActiveState) x=$a ;; SubState) x=$s ;; FragmentPath) x=$fp ;;
    UnitFileState) x=$us ;; ActiveEnterTimestamp) x=$ae ;;
  esac
  if [ "$v" = 1 ]; then printf '%s\\n' "$x"; else printf '%s=%s\\n' "$p" "$x"; fi
done
exit 0
fi
fi
`;
}
