/**
 * Keeps something with an expiry held while work runs: `renew` every `everyMs` (the next only once the
 * one before has answered, so a slow Redis never piles renewals up), until the returned stop is called.
 * `renew` answers whether it is still held: once it says not, renewing stops and `lost` is called once.
 * A renewal that throws (Redis away) is tried again at the next turn: the expiry outlives a short outage.
 * The timer never keeps the process alive.
 *
 * Used for every token a run holds with an expiry: BullMQ's job lock (src/queue/job-lock.ts), a swap's
 * lease (jobs/swap/advance-swap.ts) and a swap's report lock (jobs/report-worker.ts).
 */
export function keepRenewed(renew: () => Promise<boolean>, everyMs: number, lost?: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const turn = async () => {
    try {
      const held = await renew();
      if (stopped) return;
      if (!held) {
        stopped = true;
        lost?.();
        return;
      }
    } catch {
      // tried again at the next turn
    }
    if (!stopped) schedule();
  };
  const schedule = () => {
    timer = setTimeout(turn, everyMs);
    timer.unref();
  };
  schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
