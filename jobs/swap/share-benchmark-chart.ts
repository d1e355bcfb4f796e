import { describeError } from "../../src/errors.ts";
import type { BenchPair, PreviousBench } from "../../src/reporter/benchmark-table.ts";
import { renderBenchmarkChart } from "../../src/reporter/chart/benchmark-chart.ts";
import type { StageContext } from "./swap-context.ts";

/**
 * Uploads the benchmark comparison as a chart into the swap's thread, under the table (people read a
 * chart faster). Best effort: a chart that cannot be drawn or uploaded (no `files:write` scope, Slack
 * down) is logged and the swap goes on; the table already has the numbers.
 */
export async function shareBenchmarkChart(
  ctx: StageContext,
  current: BenchPair,
  previous: PreviousBench | undefined,
): Promise<void> {
  const { record, deps, log } = ctx;
  if (record.cardTs === undefined) return;
  const sha = record.plan?.model.sha.slice(0, 7);
  const model = `${record.plan?.model.repo ?? record.request.model.repo}${sha ? `@${sha}` : ""}`;
  try {
    const chart = renderBenchmarkChart(current, previous, { model, host: record.host, swapId: record.id });
    const comment =
      previous === undefined
        ? `📊 Benchmark of \`${model}\` on ${record.host} (no earlier numbers to compare with)`
        : `📊 Benchmark of \`${model}\` vs \`${previous.model}\` on ${record.host}`;
    const file = await deps.poster.upload(
      record.channel,
      { bytes: chart.png, filename: chart.filename, title: chart.title, altText: chart.altText },
      { threadTs: record.cardTs, comment },
    );
    log.info({ file, bytes: chart.png.length }, "benchmark chart uploaded");
  } catch (error) {
    log.warn(
      { err: describeError(error) },
      "could not upload the benchmark chart; the table in the thread has the numbers",
    );
  }
}
