import { describeError } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";

/**
 * A swap that ends before its switch leaves the engine as it found it. The build checks the new engine
 * out in place (and the editable install follows the checkout), so without this the unit serving now
 * would run the new engine at its next restart. Puts back the commit the build started from; returns
 * what happened to the engine, or undefined when the build never changed it.
 */
export async function restoreEngine(ctx: Pick<StageContext, "swap" | "host">): Promise<string | undefined> {
  const { swap, host } = ctx;
  const task = swap.record.tasks.build;
  if (task === undefined || swap.record.switch !== undefined) return undefined;
  const src = host.config.engineSourceDir;
  try {
    const previous = (await host.readTaskFile(`${task.dir}/previous-commit`))?.trim() ?? "";
    const now = (
      await host.exec(sh`git -C ${src} rev-parse -q --verify HEAD 2>/dev/null || true`)
    ).stdout.trim();
    if (now === "" || now === previous) return undefined;
    if (previous === "") {
      return `the engine source in ${src} now holds commit ${now.slice(0, 7)}: it was no git checkout before this swap, so the old engine cannot be put back, and the serving unit runs the new one at its next restart`;
    }
    await host.must(
      sh`git -C ${src} checkout -q -f --detach ${previous} && git -C ${src} clean -q -f -d && ${`${host.config.venv}/bin/pip`} install -q -e ${`${src}/python`} --no-deps`,
      `putting the engine back at ${previous.slice(0, 7)}`,
      { timeoutMs: 600_000 },
    );
    return `the engine is back at commit ${previous.slice(0, 7)}, as before the swap`;
  } catch (error) {
    return `⚠️ the engine could not be put back (${describeError(error)}): the source in ${src} may hold the new commit, which the serving unit runs at its next restart`;
  }
}
