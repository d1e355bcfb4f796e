import { resolve } from "node:path";
import { JSON_MEMBERS_BASH, recordCallBash } from "./fast-path-bash.ts";
import { sandboxPaths } from "./shims/sandbox.mjs";
import { shQuote } from "./write-shim-wrapper.ts";

/** The import check the engine build runs (src/engine/sglang/sglang-setup.ts), word for word. */
export const SGLANG_VERSION_CODE = "import sglang; print(sglang.__version__)";

/**
 * The venv python's two quick questions answered by its bash wrapper, without starting Node:
 *
 * - `python --version` / `python -V` (preflight's readVenvPython, before every plan): `Python 3.12.3`,
 *   as shims/python.mjs prints it.
 * - `python -c 'import sglang; print(sglang.__version__)'` (the engine build's import check), for the
 *   SGLang python.mjs finds (venv.mjs importableSglang): the first PYTHONPATH directory holding
 *   `sglang/`, else the project directory named by the venv's editable-install marker
 *   (`__editable__.sglang-<version>.pth`: its first line that is not empty, a comment or an `import`);
 *   the version is the first `__version__ = "…"` of its `sglang/version.py`.
 *
 * The second answers only when that is plain: no `import` fault (the slow first import), no `..` in the
 * directories, a single sglang marker (python.mjs picks the newest by mtime, which the shell cannot
 * tell apart within a clock tick), an absolute project directory, version.py in ASCII with a
 * `__version__`, faults.json in writeJsonAtomic's layout. Everything else — SGLang missing, another
 * snippet, any other option — goes to Node, which says what Python would. Each answered call is
 * recorded as `recordCall` does. `test/testbench/python-fast-path.test.ts` compares both.
 */
export function pythonFastPath(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  const site = shQuote(sandboxPaths(resolve(sandboxRoot)).sitePackagesDir);
  return `if [ "$#" -eq 1 ] && { [ "$1" = --version ] || [ "$1" = -V ]; }; then
${recordCallBash(sandboxRoot, "python")}printf 'Python 3.12.3\\n'
exit 0
fi
if [ "$#" -eq 2 ] && [ "$1" = -c ] && [ "$2" = ${shQuote(SGLANG_VERSION_CODE)} ]; then
ok=1; pd=
${JSON_MEMBERS_BASH}declare -A __F=()
json_members ${root}/state/faults.json __F
[ -z "\${__F[import]+x}" ] || ok=0
r=\${PYTHONPATH-}:
while [ "$ok" = 1 ] && [ -n "$r" ]; do
  d=\${r%%:*}; r=\${r#*:}
  [ -n "$d" ] || continue
  case /$d/ in */../*) ok=0; break ;; esac
  if [ -e "$d/sglang" ]; then pd=$d; break; fi
done
if [ "$ok" = 1 ] && [ -z "$pd" ]; then
  n=0; m=
  for x in ${site}/__editable__.*.pth; do
    b=\${x##*/}; b=\${b#__editable__.}; b=\${b%.pth}
    [[ $b =~ ^(.+)-[^-]+$ ]] || continue
    b=\${BASH_REMATCH[1]}
    case $b in *[![:ascii:]]*) ok=0 ;; esac
    [ "\${b,,}" = sglang ] || continue
    n=$((n + 1)); m=$x
  done
  [ "$n" = 1 ] && [ -f "$m" ] || ok=0
  if [ "$ok" = 1 ]; then
    mapfile -t L 2>/dev/null < "$m" || ok=0
    for l in "\${L[@]}"; do
      case $l in *[![:print:]$'\\t\\r']*|*[![:ascii:]]*) ok=0; break ;; esac
      l=\${l#"\${l%%[![:blank:]$'\\r']*}"}; l=\${l%"\${l##*[![:blank:]$'\\r']}"}
      case $l in ''|'#'*|'import '*) continue ;; esac
      pd=$l; break
    done
    case $pd in /*) ;; *) ok=0 ;; esac
    case $pd/ in */../*) ok=0 ;; esac
  fi
fi
v=
if [ "$ok" = 1 ] && [ -e "$pd/sglang" ] && [ -f "$pd/sglang/version.py" ]; then
  c=; { IFS= read -r -d '' c < "$pd/sglang/version.py"; } 2>/dev/null
  case $c in *[![:ascii:]]*) ;; *)
    re='__version__[[:space:]]*=[[:space:]]*["'"'"']([^"'"'"']+)["'"'"']'
    [[ $c =~ $re ]] && v=\${BASH_REMATCH[1]} ;;
  esac
fi
if [ "$ok" = 1 ] && [ -n "$v" ]; then
${recordCallBash(sandboxRoot, "python")}printf '%s\\n' "$v"
exit 0
fi
fi
`;
}
