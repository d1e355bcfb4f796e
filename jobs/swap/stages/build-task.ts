import { lines, type ShellCommand, sh } from "../../../src/host/shell-quote.ts";

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
export function buildScript(input: BuildInput): ShellCommand {
  const src = input.engineSourceDir;
  const out = (name: string) => `${input.dir}/${name}`;
  const pip = `${input.venv}/bin/pip`;
  const python = `${input.venv}/bin/python`;
  const patches = input.patches.map(
    (patch) => sh`echo ${`modelswap: applying ${patch}`}
git -C ${src} apply --whitespace=nowarn ${patch}`,
  );
  return sh`mkdir -p ${src}
[ -d ${`${src}/.git`} ] || git -C ${src} init -q
git -C ${src} rev-parse -q --verify HEAD > ${out("previous-commit")} 2>/dev/null || true
echo ${`modelswap: fetching ${input.ref} from ${input.upstream}`}
git -C ${src} fetch -q --depth 1 ${input.upstream} ${input.ref}
git -C ${src} checkout -q -f --detach FETCH_HEAD
# files an earlier build's patches added are untracked now: a patch that adds them again would fail
git -C ${src} clean -q -f -d
git -C ${src} rev-parse HEAD > ${out("commit")}
${lines(patches)}
${pip} install -e ${`${src}/python`} --no-deps
${python} -c 'import sglang; print(sglang.__version__)' > ${out("version")}
${python} -m sglang.launch_server --help > ${out("help.txt")}
echo "modelswap: built $(cat ${out("commit")}) (sglang $(cat ${out("version")}))"`;
}
