import { isUnitName } from "../grammar/unit-name.ts";
import { lines, type ShellCommand, sh } from "../host/shell-quote.ts";
import { hostPathSchema } from "./host-disk.ts";

/*
 * The deleting commands, each run under the fence (src/host/fence.ts) by the caller. Each checks again,
 * on the host and in the same command, what the decision was made from, since the host may have changed
 * since it was read: a directory must resolve (realpath) to the same place under the resolved root as the path that was
 * read is under the root (no symlink on the way, no `..`), and no unit file left in the unit directory may name
 * it; a unit file must still be modelswap's, neither running nor enabled.
 */

/** What happened to one path: deleted, gone already, or kept after all (and why). */
export interface DeleteOutcome {
  path: string;
  result: "deleted" | "gone" | "kept";
  why?: string;
}

const WHY: Record<string, string> = {
  symlink: "it is a symlink now",
  moved: "it no longer resolves to itself (a symlink on its way)",
  outside: "it resolves outside the root",
  named: "a unit file names it now",
  running: "it runs or is enabled now",
  foreign: "it is no longer modelswap's",
  failed: "rm failed",
};

/**
 * Deletes directories under `root` (models, or engine builds under `root/.modelswap/engines`), each only
 * when the checks above pass on the host, naming each path's outcome on a line of its own.
 */
export function deleteDirsCommand(root: string, unitDir: string, paths: readonly string[]): ShellCommand {
  const base = root.replace(/\/+$/, "");
  const admitted = paths.filter((p) => hostPathSchema.safeParse(p).success && p.startsWith(`${base}/`));
  return sh`root=${base}
real=$(realpath -e -- "$root") || { echo 'modelswap-gc: no models directory' >&2; exit 3; }
units=${unitDir.replace(/\/+$/, "")}
one() {
  if [ -L "$1" ]; then printf 'kept\\tsymlink\\t%s\\n' "$1"; return; fi
  r=$(realpath -e -- "$1" 2>/dev/null) || { printf 'gone\\t-\\t%s\\n' "$1"; return; }
  case $r in "$real"/?*) ;; *) printf 'kept\\toutside\\t%s\\n' "$1"; return;; esac
  [ "$r" = "$real/\${1#"$root"/}" ] || { printf 'kept\\tmoved\\t%s\\n' "$1"; return; }
  if [ -d "$units" ] && grep -lsF -e "$1" -e "$r" -- "$units"/*.service >/dev/null 2>&1; then printf 'kept\\tnamed\\t%s\\n' "$1"; return; fi
  if rm -rf -- "$r"; then printf 'deleted\\t-\\t%s\\n' "$1"; else printf 'kept\\tfailed\\t%s\\n' "$1"; fi
}
${lines(admitted.map((p) => sh`one ${p}`))}
true`;
}

/**
 * Deletes modelswap's unit files in `unitDir` (by name), each only while it is still modelswap's and
 * systemd neither runs nor enables it; then reloads systemd. `sudo`: the removal and the reload run as
 * `sudo -n` (hosts[].sudo).
 */
export function deleteUnitsCommand(
  unitDir: string,
  units: readonly string[],
  sudo: boolean,
  mark: string,
): ShellCommand {
  const admitted = units.filter(isUnitName);
  const priv = sudo ? sh`sudo -n` : sh``;
  return sh`dir=$(realpath -e -- ${unitDir}) || { echo 'modelswap-gc: no unit directory' >&2; exit 3; }
one() {
  f=$dir/$1
  if [ -L "$f" ]; then printf 'kept\\tsymlink\\t%s\\n' "$f"; return; fi
  [ -f "$f" ] || { printf 'gone\\t-\\t%s\\n' "$f"; return; }
  head -n 1 -- "$f" | grep -q ${`^${mark}`} || { printf 'kept\\tforeign\\t%s\\n' "$f"; return; }
  if systemctl is-active "$1" >/dev/null 2>&1 || [ "$(systemctl is-enabled "$1" 2>/dev/null)" != disabled ]; then printf 'kept\\trunning\\t%s\\n' "$f"; return; fi
  if ${priv} rm -f -- "$f"; then printf 'deleted\\t-\\t%s\\n' "$f"; else printf 'kept\\tfailed\\t%s\\n' "$f"; fi
}
${lines(admitted.map((u) => sh`one ${u}`))}
${priv} systemctl daemon-reload || true`;
}

/** The outcome lines of a delete command. */
export function parseDeleteOutcomes(stdout: string): DeleteOutcome[] {
  const out: DeleteOutcome[] = [];
  for (const line of stdout.split("\n")) {
    const [result, why, path] = line.split("\t");
    if (path === undefined || (result !== "deleted" && result !== "gone" && result !== "kept")) continue;
    out.push({ path, result, ...(result === "kept" ? { why: WHY[why ?? ""] ?? why } : {}) });
  }
  return out;
}
