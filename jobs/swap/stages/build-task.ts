import { lines, type ShellCommand, sh } from "../../../src/host/shell-quote.ts";

export interface BuildInput {
  upstream: string;
  /** What to fetch: the ref as the upstream names it (refs/heads/main, refs/pull/12/head) or the commit. */
  fetchRef: string;
  /** The commit the plan names: the build refuses anything else (a branch that moved since). */
  commit: string;
  /** This build's own directory (engineBuildDir); the new unit imports the engine from `<buildDir>/python`. */
  buildDir: string;
  venv: string;
  patches: readonly string[];
  /** The task's directory: its outputs (commit, version, help.txt, build-dir). */
  dir: string;
}

/**
 * The detached engine build, in a directory of its own: the engine source the serving unit runs, and the
 * venv's installed packages, are never touched (no checkout in place, no `git clean`, no `pip install`).
 * It fetches the ref into `<buildDir>.partial`, checks that it is the planned commit (an annotated tag
 * peeled to the commit it tags), applies the
 * configured patches, moves it to `<buildDir>` in one rename, then runs an import check and the engine's
 * own `--help` (which the plan's flags are checked against) with `PYTHONPATH=<buildDir>/python`, as the
 * new unit will run it. A rerun after a crash finds the finished directory and skips to the checks.
 */
export function buildScript(input: BuildInput): ShellCommand {
  const out = (name: string) => `${input.dir}/${name}`;
  const build = input.buildDir.replace(/\/+$/, "");
  const partial = `${build}.partial`;
  const python = `${input.venv}/bin/python`;
  const pythonPath = `${build}/python`;
  const patches = input.patches.map(
    (patch) => sh`echo ${`modelswap: applying ${patch}`}
git -C ${partial} apply --whitespace=nowarn ${patch}`,
  );
  return sh`if [ ! -f ${`${build}/.modelswap-built`} ]; then
rm -rf ${partial}
mkdir -p ${partial}
git -C ${partial} init -q
echo ${`modelswap: fetching ${input.fetchRef} from ${input.upstream} into ${build}`}
git -C ${partial} fetch -q --depth 1 ${input.upstream} ${input.fetchRef}
got=$(git -C ${partial} rev-parse "FETCH_HEAD^{commit}")
if [ "$got" != ${input.commit} ]; then
  echo ${`modelswap: ${input.fetchRef} is at`} "$got" ${`now, not at ${input.commit} as the plan says: request the swap again`}
  exit 3
fi
git -C ${partial} checkout -q --detach FETCH_HEAD
${lines(patches)}
echo ${input.commit} > ${`${partial}/.modelswap-built`}
rm -rf ${build}
mv ${partial} ${build}
fi
git -C ${build} rev-parse HEAD > ${out("commit")}
echo ${build} > ${out("build-dir")}
PYTHONPATH=${pythonPath} ${python} -c 'import sglang; print(sglang.__version__)' > ${out("version")}
PYTHONPATH=${pythonPath} ${python} -m sglang.launch_server --help > ${out("help.txt")}
echo "modelswap: built $(cat ${out("commit")}) (sglang $(cat ${out("version")})) in "${build}`;
}
