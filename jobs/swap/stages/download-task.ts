import { type ShellCommand, sh } from "../../../src/host/shell-quote.ts";
import type { ModelSummary } from "../../../src/hub/types.ts";
import { HF_MAX_WORKERS } from "../../../src/plan/disk-check.ts";

/** Where a swap keeps its detached tasks on the host: beside the models, which the bot can always write. */
export function taskDir(modelsDir: string, swapId: string, name: "download" | "build"): string {
  return `${modelsDir.replace(/\/+$/, "")}/.modelswap/tasks/${swapId}/${name}`;
}

/** The data files the download task verifies against: `<size> <path>` and sha256sum's `<hash>  <path>`. */
export function verificationFiles(info: ModelSummary): { sizes: string; sums: string } {
  const sizes = info.files.map((f) => `${f.size} ${f.path}`).join("\n");
  const sums = info.files
    .filter((f) => f.sha256 !== undefined)
    .map((f) => `${f.sha256}  ${f.path}`)
    .join("\n");
  return { sizes: `${sizes}\n`, sums: sums === "" ? "" : `${sums}\n` };
}

/**
 * `hf download`'s `--include` for exactly these files: each path is an fnmatch pattern, so `[`, `*` and `?`
 * are put in brackets (the Hub's names get here without them: hub-schemas.ts refuses them; this is not
 * the only guard).
 */
export function includeArgs(info: Pick<ModelSummary, "files">): string[] {
  return info.files.flatMap((f) => ["--include", f.path.replace(/[[*?]/g, (c) => `[${c}]`)]);
}

/**
 * The detached download: `hf download` pinned to the commit, of the files the record lists (the weights
 * and the files beside them the engine reads, not the whole repository: weight-files.ts `downloadSet`),
 * then every file's size and every LFS file's sha256 checked. `hf` skips complete files on a re-run, but never resumes a partial one from another
 * process (fixtures/gpu-host/hf-download-1.33.md), so orphaned *.incomplete files are removed first.
 * A file that fails its check is removed with its `hf` metadata (`.cache/huggingface/download/<path>
 * .metadata`, by which hf would skip it as complete), named in the log, and the task fails: the stage's
 * next attempt (swaps.downloadRetries, bounded) fetches it again, as does a later swap.
 */
export function downloadScript(info: ModelSummary, modelDir: string, dir: string): ShellCommand {
  const partials = `${modelDir}/.cache/huggingface/download`;
  return sh`mkdir -p ${modelDir}
find ${partials} -name '*.incomplete' -delete 2>/dev/null || true
echo ${`modelswap: downloading ${info.repo}@${info.sha} into ${modelDir}`}
hf download ${info.repo} --revision ${info.sha} --local-dir ${modelDir} --max-workers ${HF_MAX_WORKERS} ${includeArgs(info)}
${verifyScript(modelDir, dir)}`;
}

/**
 * Every file's size, then every LFS file's sha256, against the lists in the task's directory (written by
 * the stage: verificationFiles). A file that fails is removed with its `hf` metadata, named in the log,
 * and the task fails (exit 3 or 4). Ends in the model's directory.
 */
export function verifyScript(modelDir: string, dir: string): ShellCommand {
  const sizes = `${dir}/sizes`;
  const sums = `${dir}/sha256sums`;
  return sh`cd ${modelDir}
refetch() { rm -f -- "$1" ".cache/huggingface/download/$1.metadata"; }
bad=0
while read -r size path; do
  actual=$(stat -c %s -- "$path" 2>/dev/null || echo missing)
  if [ "$actual" != "$size" ]; then
    echo "modelswap: $path has $actual bytes, not $size: removed, it is fetched again"
    refetch "$path"; bad=1
  fi
done < ${sizes}
[ "$bad" = 0 ] || exit 3
if [ -s ${sums} ] && ! sha256sum --quiet --strict -c ${sums} > ${`${dir}/sha256-failures`} 2>&1; then
  sed -n 's/: FAILED.*$//p' ${`${dir}/sha256-failures`} | while IFS= read -r path; do
    echo "modelswap: $path failed its sha256 check: removed, it is fetched again"
    refetch "$path"
  done
  exit 4
fi
echo "modelswap: verified $(wc -l < ${sizes}) files"`;
}
