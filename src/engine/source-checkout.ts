import { lines, sh } from "../host/shell-quote.ts";
import type { EngineBuildInput } from "./engine-setup.ts";

/*
 * What every engine's build and unit share: the checkout of the planned commit, and reading a flag's
 * value back from a unit's ExecStart words.
 */

/**
 * Fetches the planned commit of the upstream into `partial` (a fresh repository), checks it is that
 * commit, checks it out and applies the patches: the first half of every engine's build.
 */
export function fetchSource(input: EngineBuildInput, partial: string) {
  const patches = input.patches.map(
    (patch) => sh`echo ${`modelswap: applying ${patch}`}
git -C ${partial} apply --whitespace=nowarn ${patch}`,
  );
  return sh`rm -rf ${partial}
mkdir -p ${partial}
git -C ${partial} init -q
echo ${`modelswap: fetching ${input.fetchRef} from ${input.upstream} into ${input.buildDir.replace(/\/+$/, "")}`}
git -C ${partial} fetch -q --depth 1 ${input.upstream} ${input.fetchRef}
got=$(git -C ${partial} rev-parse "FETCH_HEAD^{commit}")
if [ "$got" != ${input.commit} ]; then
  echo ${`modelswap: ${input.fetchRef} is at`} "$got" ${`now, not at ${input.commit} as the plan says: request the swap again`}
  exit 3
fi
git -C ${partial} checkout -q --detach FETCH_HEAD
${lines(patches)}`;
}

/** The value after `flag` in ExecStart words (`--flag value` or `--flag=value`). */
export function flagValueOf(words: readonly string[], flags: readonly string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (flags.includes(word)) return words[i + 1];
    const eq = flags.find((f) => word.startsWith(`${f}=`));
    if (eq !== undefined) return word.slice(eq.length + 1);
  }
  return undefined;
}
