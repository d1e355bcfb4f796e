import type { Logger } from "../src/log.ts";
import type { HistoryJob } from "../src/queue/command-queue.ts";
import { type HistoryRow, historyRow, renderHistory } from "../src/reporter/history-message.ts";
import type { SlackPoster } from "../src/slack/slack-poster.ts";
import type { Store } from "../src/store/store.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";

export interface HistoryJobDeps {
  poster: SlackPoster;
  store: Store;
  log: Logger;
}

/** How far back to look for the model before the oldest shown swap (pages of this many records). */
const LOOKBACK_PAGE = 20;
const LOOKBACK_PAGES = 10;

/**
 * Reads the ledger (newest first) and posts it to the channel the command came from. Each swap's
 * benchmark is compared with the previous succeeded swap on its host, which may lie beyond the rows
 * shown: the host's index is read further back until one is found (or a bounded number of records).
 */
export async function runHistoryJob(
  job: HistoryJob,
  { poster, store, log }: HistoryJobDeps,
): Promise<HistoryRow[] | undefined> {
  const { records, unreadable } = await store.swaps.history({
    ...(job.host === undefined ? {} : { host: job.host }),
    limit: job.limit,
  });
  if (unreadable.length > 0)
    log.error({ unreadable }, "swap records in the ledger do not parse: left out of the history");
  const baselines = await findBaselines(store, records);
  const rows = records.map((record) => historyRow(record, baselines.get(record.id)));
  log.info({ host: job.host ?? "all", rows: rows.length }, "history read");
  // the CLI and the HTTP API: the rows are the answer, nothing is posted
  if (job.answer === "return") return rows;
  await poster.post(
    job.channel,
    renderHistory(rows, {
      ...(job.host === undefined ? {} : { host: job.host }),
      limit: job.limit,
      unreadable: unreadable.length,
    }),
  );
  return undefined;
}

/** For each record, the previous succeeded swap on its host (the model it replaced), where one is known. */
export async function findBaselines(
  store: Store,
  records: readonly SwapRecord[],
): Promise<Map<string, SwapRecord>> {
  const out = new Map<string, SwapRecord>();
  const byHost = new Map<string, SwapRecord[]>();
  for (const record of records) {
    const list = byHost.get(record.host) ?? [];
    list.push(record);
    byHost.set(record.host, list);
  }
  for (const [host, shown] of byHost) {
    // Newest first; the records of one host among the newest overall are the newest of that host.
    const sorted = [...shown].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt));
    // Only benchmarked swaps are compared; look further back only when one of them has no baseline yet.
    const needed = sorted.some(
      (r, i) => r.benchmark !== undefined && !sorted.slice(i + 1).some((o) => o.outcome === "succeeded"),
    );
    const older: SwapRecord[] = [];
    let oldest = needed ? sorted.at(-1)?.createdAt : undefined;
    for (let page = 0; page < LOOKBACK_PAGES && oldest !== undefined; page++) {
      const next = (await store.swaps.history({ host, limit: LOOKBACK_PAGE, before: oldest })).records;
      older.push(...next);
      if (next.some((r) => r.outcome === "succeeded") || next.length < LOOKBACK_PAGE) break;
      oldest = next.at(-1)?.createdAt;
    }
    const all = [...sorted, ...older];
    for (let i = 0; i < sorted.length; i++) {
      const current = sorted[i]!;
      const baseline = all.slice(i + 1).find((r) => r.outcome === "succeeded");
      if (baseline !== undefined) out.set(current.id, baseline);
    }
  }
  return out;
}
