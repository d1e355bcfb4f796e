/**
 * A steady stream of clients, as production traffic reaches a host: a new OpenAI-style completion
 * request every `everyMs` (each waits for its own answer; they overlap), for measuring what a swap does
 * to them. Each answer is kept with its status, its latency and the model that answered it (the
 * completion's `model`), so a test can count failures, find the longest time without an answer and say
 * which requests the old and the new model served.
 */

export interface ClientAnswer {
  /** When the request was sent and when its answer ended (Date.now()). */
  sentAt: number;
  at: number;
  /** HTTP status, or 0 when the connection failed (refused, reset) before any answer. */
  status: number;
  /** The `model` of a 200 completion; the error text otherwise. */
  model: string;
  ms: number;
}

export interface ClientStreamReport {
  sent: number;
  answered: number;
  /** Answers that were not 200 (HTTP errors and failed connections). */
  failed: number;
  /** The longest time between two consecutive successful answers, in ms. */
  maxGapMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Successful answers by the model that gave them. */
  byModel: Record<string, number>;
  answers: ClientAnswer[];
}

export interface ClientStream {
  /** Stops sending; the requests in flight go on (stop() waits for them and reports). */
  halt(): void;
  /** Stops sending, waits for every request in flight to end, and reports. */
  stop(): Promise<ClientStreamReport>;
  /** Answers so far. */
  readonly answers: readonly ClientAnswer[];
}

export function startClientStream(
  url: string,
  /** `long`: ignore_eos (SGLang's extra sampling parameter), so each answer is max_tokens long. */
  options: { everyMs?: number; maxTokens?: number; timeoutMs?: number; long?: boolean } = {},
): ClientStream {
  const everyMs = options.everyMs ?? 200;
  const answers: ClientAnswer[] = [];
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  const one = async () => {
    const sentAt = Date.now();
    sent++;
    let status = 0;
    let model = "";
    try {
      const response = await fetch(`${url.replace(/\/+$/, "")}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          prompt: "Say hello.",
          max_tokens: options.maxTokens ?? 8,
          ...(options.long === true ? { ignore_eos: true } : {}),
        }),
        signal: AbortSignal.timeout(options.timeoutMs ?? 600_000),
      });
      status = response.status;
      const text = await response.text();
      model =
        status === 200 ? String((JSON.parse(text) as { model?: unknown }).model ?? "") : text.slice(0, 200);
    } catch (error) {
      status = 0;
      model = String((error as Error).cause ?? error).slice(0, 200);
    }
    const at = Date.now();
    answers.push({ sentAt, at, status, model, ms: at - sentAt });
  };
  const timer = setInterval(() => {
    const p = one().finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, everyMs);
  return {
    answers,
    halt() {
      clearInterval(timer);
    },
    async stop() {
      clearInterval(timer);
      await Promise.all([...inFlight]);
      return report(sent, answers);
    },
  };
}

function report(sent: number, answers: ClientAnswer[]): ClientStreamReport {
  // a refused request ends at once: what a user notices is the time without a good answer
  const ends = answers
    .filter((a) => a.status === 200)
    .map((a) => a.at)
    .sort((a, b) => a - b);
  let maxGapMs = 0;
  for (let i = 1; i < ends.length; i++) maxGapMs = Math.max(maxGapMs, ends[i]! - ends[i - 1]!);
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  const pick = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0;
  const byModel: Record<string, number> = {};
  for (const a of answers) if (a.status === 200) byModel[a.model] = (byModel[a.model] ?? 0) + 1;
  return {
    sent,
    answered: answers.length,
    failed: answers.filter((a) => a.status !== 200).length,
    maxGapMs,
    p50Ms: pick(0.5),
    p99Ms: pick(0.99),
    maxMs: ms.at(-1) ?? 0,
    byModel,
    answers,
  };
}
