import { z } from "zod";
import { CodedError } from "../errors.ts";
import { type ShellCommand, sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import { type DiskItem, type HostDisk, OURS_MARK, type UnitFile } from "./retention-plan.ts";

type Exec = Pick<HostTransport, "hostName" | "exec">;

/** Where a host keeps what retention looks at: its models directory and its unit directory. */
export interface DiskRoots {
  modelsDir: string;
  unitDir: string;
}

/** A path the host printed, as it may come back to a shell: absolute, plain, no `..`, no control characters. */
export const hostPathSchema = z
  .string()
  .regex(/^\/[^\0\n\t\r]*$/)
  .refine((p) => !p.split("/").includes("..") && !p.split("/").includes("."));

const UNIT_TEXT_BYTES = 65_536;

/**
 * One read of the host: the models directory (as configured: the form unit files name), the bytes free there (df), every model
 * directory in it, every engine build under `.modelswap/engines` and compile cache under `.modelswap/caches` (du, mtime; symlinks are listed by
 * nobody: they are never followed or deleted), and every unit file in the unit directory with its text
 * and, for modelswap's own, whether systemd runs or enables it. Reads only.
 */
export function readDiskCommand(roots: DiskRoots): ShellCommand {
  // listed under the root as configured (the form unit files name), checked by its resolved form when deleting
  const root = roots.modelsDir.replace(/\/+$/, "") || "/";
  return sh`root=${root}
[ -d "$root" ] || { echo 'modelswap-gc: no models directory' >&2; exit 3; }
printf 'root\\t%s\\n' "$root"
printf 'free\\t%s\\n' "$(df -B1 --output=avail "$root" | tail -n 1 | tr -d ' ')"
for d in "$root"/* "$root"/.modelswap/engines/* "$root"/.modelswap/caches/*; do
  [ -d "$d" ] && [ ! -L "$d" ] || continue
  case $d in "$root"/.modelswap/caches/*) k=cache;; "$root"/.modelswap/*) k=build;; *) k=model;; esac
  printf '%s\\t%s\\t%s\\t%s\\n' "$k" "$(du -sB1 -- "$d" | cut -f1)" "$(stat -c %Y -- "$d")" "$d"
done
u=${roots.unitDir.replace(/\/+$/, "") || "/"}
[ -d "$u" ] || exit 0
for f in "$u"/*.service; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  n=\${f##*/}; a=-; e=-
  case $n in -*|*[!A-Za-z0-9@._:-]*) ;; *)
    if head -n 1 -- "$f" | grep -q ${`^${OURS_MARK}`}; then
      a=$(systemctl is-active "$n" 2>/dev/null); e=$(systemctl is-enabled "$n" 2>/dev/null)
    fi;;
  esac
  printf 'unit\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$(du -sB1 -- "$f" | cut -f1)" "$(stat -c %Y -- "$f")" "\${a:--}" "\${e:--}" "$(head -c ${UNIT_TEXT_BYTES} -- "$f" | base64 -w0)" "$f"
done`;
}

/** The host's answer to readDiskCommand; lines that do not parse (a name with a tab or newline) are left out. */
export function parseDisk(stdout: string): HostDisk & { root: string } {
  const disk: HostDisk & { root: string } = {
    root: "",
    models: [],
    builds: [],
    caches: [],
    units: [],
    freeBytes: 0,
  };
  for (const line of stdout.split("\n")) {
    const cells = line.split("\t");
    const [kind, a = "", b = "", ...rest] = cells;
    if (kind === "root") disk.root = a;
    else if (kind === "free") disk.freeBytes = Number(a) || 0;
    else if ((kind === "model" || kind === "build" || kind === "cache") && cells.length === 4) {
      const item = diskItem(kind, a, b, rest[0] ?? "");
      if (item !== undefined)
        (kind === "model" ? disk.models : kind === "build" ? disk.builds : disk.caches).push(item);
    } else if (kind === "unit" && cells.length === 7) {
      const [active = "", enabled = "", text = "", path = ""] = rest;
      const item = diskItem("unit", a, b, path);
      if (item === undefined) continue;
      const body = Buffer.from(text, "base64").toString("utf8");
      const unit: UnitFile = {
        ...item,
        kind: "unit",
        ours: body.startsWith(OURS_MARK),
        active: active === "active" || active === "activating" || active === "reloading",
        // anything but a plain "disabled" (enabled, linked, static, alias…) keeps a unit, as does an unknown answer
        enabled: enabled !== "disabled",
        text: body,
      };
      disk.units.push(unit);
    }
  }
  return disk;
}

function diskItem(kind: DiskItem["kind"], bytes: string, mtime: string, path: string): DiskItem | undefined {
  if (!/^\d+$/.test(bytes) || !/^\d+$/.test(mtime) || !hostPathSchema.safeParse(path).success)
    return undefined;
  return {
    kind,
    path,
    name: path.slice(path.lastIndexOf("/") + 1),
    bytes: Number(bytes),
    mtime: Number(mtime),
  };
}

/** Reads the host's disk (readDiskCommand); a host without its models directory is an error that says so. */
export async function readHostDisk(transport: Exec, roots: DiskRoots): Promise<HostDisk & { root: string }> {
  const result = await transport.exec(readDiskCommand(roots), { timeoutMs: 120_000 });
  if (result.code !== 0 || !result.stdout.startsWith("root\t")) {
    throw new CodedError(
      "GC_READ_FAILED",
      `could not read the disk of ${transport.hostName} (${(result.stderr.trim() || `exit ${result.code}`).slice(0, 300)})`,
      `check that ${roots.modelsDir} exists on ${transport.hostName} and that the bot's user may read it and ${roots.unitDir}`,
    );
  }
  return parseDisk(result.stdout);
}
