/** A client of the front door, as an OpenAI-style client would use it: one request, or one stream. */

export interface Answer {
  status: number;
  body: string;
  /** From sending the request to the end of the answer. */
  ms: number;
  /** When the answer ended (Date.now()). */
  at: number;
}

export async function send(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const response = await fetch(url, { method: "POST", ...init });
  const body = await response.text();
  return { status: response.status, body, ms: Date.now() - started, at: Date.now() };
}

export function servedBy(answer: Answer): string {
  return (JSON.parse(answer.body) as { served_by: string }).served_by;
}

export interface Stream {
  /** `data:` events as they arrived, with the time each did. */
  events: { at: number; data: string }[];
  /** Resolves when the stream ends: its status and whether it ended with `data: [DONE]`. */
  done: Promise<{ status: number; complete: boolean; error?: string }>;
  /** Resolves once the first event arrived. */
  first: Promise<void>;
}

export function openStream(url: string, events: number, everyMs: number): Stream {
  const out: Stream["events"] = [];
  let firstSeen: () => void = () => {};
  const first = new Promise<void>((resolve) => {
    firstSeen = resolve;
  });
  const done = (async () => {
    const response = await fetch(`${url}?stream=${events}&every=${everyMs}`, { method: "POST" });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    try {
      for (;;) {
        const { value, done: ended } = await reader.read();
        if (ended) break;
        buffered += decoder.decode(value, { stream: true });
        let cut = buffered.indexOf("\n\n");
        while (cut >= 0) {
          const line = buffered.slice(0, cut);
          buffered = buffered.slice(cut + 2);
          if (line.startsWith("data: ")) {
            out.push({ at: Date.now(), data: line.slice(6) });
            firstSeen();
          }
          cut = buffered.indexOf("\n\n");
        }
      }
    } catch (error) {
      return { status: response.status, complete: false, error: String(error) };
    }
    return { status: response.status, complete: out.at(-1)?.data === "[DONE]" };
  })();
  return { events: out, done, first };
}
