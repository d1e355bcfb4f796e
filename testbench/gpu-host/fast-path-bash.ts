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
