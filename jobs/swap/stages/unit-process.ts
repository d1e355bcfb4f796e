import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";

/** A unit's main process as systemd knows it (0: none). */
export async function mainPid(ctx: Pick<StageContext, "host">, unit: string): Promise<number> {
  const result = await ctx.host.exec(sh`systemctl show -p MainPID --value ${unit}`);
  return Number(result.stdout.trim()) || 0;
}
