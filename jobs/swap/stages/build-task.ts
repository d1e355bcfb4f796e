import { quote } from "../../../src/host/shell-quote.ts";

export interface BuildInput {
  engineSourceDir: string;
  venv: string;
  upstream: string;
  ref: string;
  patches: readonly string[];
  dir: string;
}

/**
 * The detached engine build: fetch the upstream at the ref into the source directory, record the commit,
 * apply the configured patches, `pip install -e python --no-deps` (never let the engine's pins replace the
 * host's CUDA stack), then an import check and the engine's own `--help`, which the plan's flags are
 * checked against.
 */
export function buildScript(input: BuildInput): string {
  const src = quote(input.engineSourceDir);
  const out = (name: string) => quote(`${input.dir}/${name}`);
  return [
    `mkdir -p ${src}`,
    `[ -d ${src}/.git ] || git -C ${src} init -q`,
    `git -C ${src} rev-parse -q --verify HEAD > ${out("previous-commit")} 2>/dev/null || true`,
    `echo ${quote(`modelswap: fetching ${input.ref} from ${input.upstream}`)}`,
    `git -C ${src} fetch -q --depth 1 ${quote(input.upstream)} ${quote(input.ref)}`,
    `git -C ${src} checkout -q -f --detach FETCH_HEAD`,
    // files an earlier build's patches added are untracked now: a patch that adds them again would fail
    `git -C ${src} clean -q -f -d`,
    `git -C ${src} rev-parse HEAD > ${out("commit")}`,
    ...input.patches.map(
      (patch) =>
        `echo ${quote(`modelswap: applying ${patch}`)}\ngit -C ${src} apply --whitespace=nowarn ${quote(patch)}`,
    ),
    `${quote(`${input.venv}/bin/pip`)} install -e ${src}/python --no-deps`,
    `${quote(`${input.venv}/bin/python`)} -c 'import sglang; print(sglang.__version__)' > ${out("version")}`,
    `${quote(`${input.venv}/bin/python`)} -m sglang.launch_server --help > ${out("help.txt")}`,
    `echo "modelswap: built $(cat ${out("commit")}) (sglang $(cat ${out("version")}))"`,
  ].join("\n");
}
