import { resolve } from "node:path";
import { ALIVE_BASH, JSON_MEMBERS_BASH, recordCallBash } from "./fast-path-bash.ts";
import { gpuSet } from "./shims/gpu-sets.mjs";
import { FIELDS, gpuStatus, NA } from "./shims/nvidia-smi-fields.mjs";
import { shQuote } from "./write-shim-wrapper.ts";

/** Fields whose value is the GPU's alone, whatever runs on it. */
const STATIC_FIELDS = [
  "index",
  "name",
  "gpu_name",
  "uuid",
  "gpu_uuid",
  "memory.total",
  "compute_cap",
  "driver_version",
  "count",
];
/** Fields that follow the GPU's utilization alone (nvidia-smi-fields.mjs gpuStatus). */
const UTIL_FIELDS = ["utilization.gpu", "temperature.gpu", "power.draw"];
/** Fields that follow the memory the GPU's processes hold. */
const MEMORY_FIELDS = ["memory.used", "memory.free"];

/**
 * `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]` answered by the shim's bash wrapper,
 * without starting Node: preflight reads the GPUs this way before every plan (src/gpu/nvidia-smi.ts, the
 * capture ../shared/fixtures/gpu-host/h200-1gpu/nvidia-smi-query.csv), about one Node start in eleven of
 * the suite's shim calls.
 *
 * The fields are those of the product's query (index, name, uuid, memory.total, memory.used, memory.free,
 * utilization.gpu, temperature.gpu, power.draw, compute_cap, driver_version) and the aliases and `count`,
 * in any order and number. What does not depend on load is written into the wrapper from the same tables
 * `shims/nvidia-smi.mjs` prints from (gpu-sets.mjs, nvidia-smi-fields.mjs), for the host's GPU set; so are
 * temperature and power draw for every utilization from 0 to 100 %, each computed by `gpuStatus` itself.
 * The load is read as the shim reads it (`liveGpuUsage`): `state/gpu-usage/<pid>.json` of live processes,
 * each one's MiB counted on every GPU it lists and its utilization added (capped at 100); a GPU with any
 * process uses min(memory.total − reserved, their MiB + the per-process overhead), free is the rest.
 *
 * It answers only when the host's state/config.json names the GPU set the wrapper was written for and
 * state/faults.json has no `nvidiaSmi` fault, both in writeJsonAtomic's layout, and every usage file is
 * in the layout sandbox.mjs `registerGpuUsage` writes with whole numbers (`memMiB` one number). Any other
 * form — `-i`, another field or format, spaces in the lists — goes to Node. Each answered call is recorded
 * in `state/calls.jsonl` as `recordCall` does. `test/testbench/nvidia-smi-fast-path.test.ts` compares both.
 */
export function nvidiaSmiFastPath(sandboxRoot: string, gpuSetName: string): string {
  const root = shQuote(resolve(sandboxRoot));
  const all = gpuSet(gpuSetName);
  const value = (field: string, gpu: (typeof all)[number], status: ReturnType<typeof gpuStatus>) => {
    const v = FIELDS[field]!.get(gpu, status, all);
    if (v === NA) throw new Error(`nvidia-smi fast path: ${field} is [N/A] on ${gpuSetName}`);
    return String(v);
  };
  const array = (values: string[]) => `(${values.map(shQuote).join(" ")})`;
  const tables: string[] = [];
  STATIC_FIELDS.forEach((field, k) => {
    tables.push(`__s${k}=${array(all.map((g) => value(field, g, gpuStatus(g, []))))}`);
  });
  all.forEach((g, i) => {
    // gpuStatus of the GPU with one process adding u % (its MiB do not matter to these fields)
    const at = Array.from({ length: 101 }, (_, u) =>
      gpuStatus(g, [{ pid: 1, gpus: [g.index], memMiB: 0, util: u, processName: "x" }]),
    );
    UTIL_FIELDS.forEach((field, k) => {
      tables.push(`__u${k}_${i}=${array(at.map((s) => value(field, g, s)))}`);
    });
    if (g.index !== i)
      throw new Error(`nvidia-smi fast path: GPU ${i} of ${gpuSetName} has index ${g.index}`);
  });
  const capacity = all.map((g) => g.memoryTotalMiB - g.reservedMiB).join(" ");
  const overhead = all.map((g) => g.processOverheadMiB).join(" ");
  const fieldCase = (fields: string[], kind: string) =>
    fields.map((f, k) => `${f}) t=${kind}; k=${k} ;;`).join("\n    ");
  const headerCase = [...STATIC_FIELDS, ...UTIL_FIELDS, ...MEMORY_FIELDS]
    .map((f) => `${f}) h=${shQuote(FIELDS[f]!.header)}; s=${shQuote(FIELDS[f]!.unit)} ;;`)
    .join("\n    ");
  return `__ms_fast=0
if [ "$#" -eq 2 ]; then
__ms_fast=1
for x in "$@"; do case "$x" in *[!A-Za-z0-9._=,-]*) __ms_fast=0; break ;; esac; done
fi
if [ "$__ms_fast" = 1 ]; then
q=; fm=; ok=1
case $1 in
  --query-gpu=*) q=\${1#--query-gpu=}; case $2 in --format=*) fm=\${2#--format=} ;; esac ;;
  --format=*) fm=\${1#--format=}; case $2 in --query-gpu=*) q=\${2#--query-gpu=} ;; esac ;;
esac
[ -n "$q" ] && [ -n "$fm" ] || ok=0
case ",$q,$fm," in *,,*) ok=0 ;; esac
hd=1; un=1; r=$fm,; p=\${r%%,*}; r=\${r#*,}
[ "$p" = csv ] || ok=0
while [ -n "$r" ]; do p=\${r%%,*}; r=\${r#*,}; case $p in noheader) hd=0 ;; nounits) un=0 ;; *) ok=0 ;; esac; done
fl=(); r=$q,
while [ -n "$r" ]; do
  p=\${r%%,*}; r=\${r#*,}; fl+=("$p")
  case $p in
    ${fieldCase(STATIC_FIELDS, "s")}
    ${fieldCase(UTIL_FIELDS, "u")}
    ${fieldCase(MEMORY_FIELDS, "m")}
    *) ok=0 ;;
  esac
done
${JSON_MEMBERS_BASH}${ALIVE_BASH}declare -A __F=() __C=()
[ "$ok" = 1 ] && json_members ${root}/state/faults.json __F && json_members ${root}/state/config.json __C
[ -z "\${__F[nvidiaSmi]+x}" ] || ok=0
g='"h200-1gpu"'; [ -z "\${__C[gpus]+x}" ] || g=\${__C[gpus]}
[ "$g" = ${shQuote(JSON.stringify(gpuSetName))} ] || ok=0
n=${all.length}; cap=(${capacity}); ovh=(${overhead}); np=(); am=(); ut=()
for ((i = 0; i < n; i++)); do np[i]=0; am[i]=0; ut[i]=0; done
if [ "$ok" = 1 ]; then
for f in ${root}/state/gpu-usage/*.json; do
  b=\${f##*/}; b=\${b%.json}
  [[ $b =~ ^[0-9]+$ ]] || continue
  [ "\${#b}" -le 9 ] || { ok=0; break; }
  alive "$((10#$b))" || continue
  L=(); { mapfile -t L < "$f"; } 2>/dev/null || continue
  j=2; gl=" "
  [ "\${L[0]-}" = "{" ] || { ok=0; break; }
  if [ "\${L[1]-}" = '  "gpus": [],' ]; then :
  elif [ "\${L[1]-}" = '  "gpus": [' ]; then
    while [[ \${L[j]-} =~ ^\\ {4}([0-9]{1,9}),?$ ]]; do gl="$gl\${BASH_REMATCH[1]} "; j=$((j + 1)); done
    [ "\${L[j]-}" = '  ],' ] || { ok=0; break; }
    j=$((j + 1))
  else ok=0; break; fi
  [[ \${L[j]-} =~ ^\\ {2}\\"memMiB\\":\\ (-?[0-9]{1,15}),$ ]] || { ok=0; break; }
  mem=\${BASH_REMATCH[1]}; [ "$mem" -ge 0 ] || mem=0
  [[ \${L[j + 1]-} =~ ^\\ {2}\\"util\\":\\ (-?[0-9]{1,15}),$ ]] || { ok=0; break; }
  u=\${BASH_REMATCH[1]}
  [[ \${L[j + 2]-} == '  "processName": '* ]] && [ "\${L[j + 3]-}" = "}" ] && [ "\${#L[@]}" -eq $((j + 4)) ] || { ok=0; break; }
  for ((i = 0; i < n; i++)); do
    case $gl in *" $i "*) np[i]=$((np[i] + 1)); am[i]=$((am[i] + mem)); ut[i]=$((ut[i] + u)) ;; esac
  done
done
fi
if [ "$ok" = 1 ]; then
${tables.join("\n")}
o=
if [ "$hd" = 1 ]; then
  w=; for p in "\${fl[@]}"; do case $p in
    ${headerCase}
  esac; w="$w\${w:+, }$h"; done; o="$w"$'\\n'
fi
for ((i = 0; i < n; i++)); do
  c=\${ut[i]}; [ "$c" -le 100 ] || c=100; [ "$c" -ge 0 ] || c=0
  used=0; [ "\${np[i]}" -eq 0 ] || { used=$((am[i] + ovh[i])); [ "$used" -le "\${cap[i]}" ] || used=\${cap[i]}; }
  w=
  for p in "\${fl[@]}"; do
    case $p in
      ${headerCase}
    esac
    case $p in
      ${fieldCase(STATIC_FIELDS, "s")}
      ${fieldCase(UTIL_FIELDS, "u")}
      ${fieldCase(MEMORY_FIELDS, "m")}
    esac
    case $t in
      s) a="__s$k[$i]"; v=\${!a} ;;
      u) a="__u\${k}_$i[$c]"; v=\${!a} ;;
      m) if [ "$k" = 0 ]; then v=$used; else v=$((cap[i] - used)); fi ;;
    esac
    [ "$un" = 0 ] || v=$v$s
    w="$w\${w:+, }$v"
  done
  o="$o$w"$'\\n'
done
${recordCallBash(sandboxRoot, "nvidia-smi")}printf '%s' "$o"
exit 0
fi
fi
`;
}
