/**
 * What `work` gives, or the error `late()` makes once `ms` have passed without an answer; the timer is
 * cleared either way, so a finished wait keeps no process alive. `work` itself is not cancelled.
 */
export async function withTimeout<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
