import { resolve } from "node:path";
import { JSON_MEMBERS_BASH, recordCallBash } from "./fast-path-bash.ts";
import { HF_VERSION } from "./shims/hf-texts.mjs";
import { shQuote } from "./write-shim-wrapper.ts";

/**
 * `hf --version` / `hf -v` (the doctor's and preflight's check of the Hub CLI) answered by the shim's bash
 * wrapper, without starting Node: the bare version on a line, as shims/hf.mjs prints it (huggingface_hub
 * 1.33's format, fixtures/gpu-host/hf-cli-1.33.txt) — the `hfVersion` fault's string when set, else
 * 1.33.0 — exit 0, the call recorded as `recordCall` does. A fault string with an escape in its JSON,
 * faults.json in another layout, or any other form goes to Node.
 * `test/testbench/hf-fast-path.test.ts` compares both.
 */
export function hfFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  return `if [ "$#" -eq 1 ] && { [ "$1" = --version ] || [ "$1" = -v ]; }; then
ok=1; v=${shQuote(HF_VERSION)}
${JSON_MEMBERS_BASH}declare -A __F=()
json_members ${root}/state/faults.json __F
if [ -n "\${__F[hfVersion]+x}" ]; then
  f=\${__F[hfVersion]}
  case $f in
    *\\\\*) ok=0 ;;
    '"'*'"') v=\${f:1:\${#f}-2} ;;
  esac
fi
if [ "$ok" = 1 ]; then
${recordCallBash(sandboxRoot, "hf")}printf '%s\\n' "$v"
exit 0
fi
fi
`;
}
