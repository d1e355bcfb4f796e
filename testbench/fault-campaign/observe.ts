import { historyRow } from "../../src/reporter/history-message.ts";
import type { Bench } from "../bench.ts";
import { CHANNEL, USERS } from "../bench.ts";
import { slotStates } from "../front-door-watch.ts";
import type { SlackMessage } from "../slack/index.ts";
import type { SwapDriver } from "../swap-driver.ts";
import { until } from "../until.ts";
import {
  agrees,
  type FinalLineClaim,
  type HostSample,
  type LedgerClaim,
  type Outcome,
  readCardOutcome,
  readFinalLine,
  readLedger,
  type Serves,
  servedBy,
} from "./checker.ts";

/*
 * What the checker reads, taken only where a user or an operator would look: Slack as the emulator holds
 * it (the swap's thread, its card, `/llm history` asked in the channel), and the host itself — a client's
 * completion request where clients send theirs, `systemctl` on the host, the front door's slot states
 * through HAProxy's Runtime API. Never the swap's record.
 */

/** Where the host's clients send requests: its front door, else the serving port. */
export function clientUrl(bench: Bench, host: string): string {
  const h = bench.host(host);
  return h.frontDoor?.url ?? `http://127.0.0.1:${h.servingPort}`;
}

/**
 * One completion request, as a client sends it (temperature 0): who answered, and whether it is the NaN
 * output (`!!!!`). `timeoutMs` bounds a request the front door holds while nothing listens.
 */
export async function ask(url: string, timeoutMs = 3000): Promise<HostSample["answer"]> {
  try {
    const response = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "The capital of France is", max_tokens: 8, temperature: 0 }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (response.status !== 200) return { status: response.status, error: text.slice(0, 160) };
    const body = JSON.parse(text) as { model?: string; choices?: { text?: string }[] };
    const out = body.choices?.[0]?.text ?? "";
    return { status: 200, model: String(body.model ?? ""), nan: out.length > 0 && /^!+$/.test(out.trim()) };
  } catch (error) {
    const e = error as Error & { cause?: { code?: string } };
    return { status: 0, error: e.name === "TimeoutError" ? "held or silent" : (e.cause?.code ?? e.message) };
  }
}

/** The host's units that are active or on their way (activating, auto-restart), with their main process. */
export async function liveUnits(bench: Bench, host: string): Promise<HostSample["units"]> {
  const sim = bench.host(host).sim;
  const listed = await sim.systemctl("list-units", "--type=service", "--all", "--no-legend", "--plain");
  const units: HostSample["units"] = [];
  for (const line of listed.stdout.split("\n")) {
    const [unit, , active, sub] = line.trim().split(/\s+/);
    if (unit === undefined || !unit.endsWith(".service")) continue;
    if (active !== "active" && active !== "activating" && active !== "reloading") continue;
    const state = await sim.unitState(unit);
    units.push({
      unit,
      activeState: state.activeState,
      subState: state.subState || (sub ?? ""),
      mainPid: state.mainPid,
    });
  }
  return units;
}

/** One look at the host: a client's request, the live units, the front door's slots. */
export async function lookAtHost(bench: Bench, host: string): Promise<HostSample> {
  const at = Date.now();
  const [answer, units, slots] = await Promise.all([
    ask(clientUrl(bench, host)),
    liveUnits(bench, host),
    bench.host(host).frontDoor === undefined
      ? Promise.resolve(undefined)
      : slotStates(bench, host).catch(() => undefined),
  ]);
  return { at, answer, units, ...(slots === undefined ? {} : { slots }) };
}

/**
 * Looks at the host until two looks in a row agree with what the bot said serves (a unit systemd is
 * restarting gets its chance), or `windowMs` has passed; every look, oldest first (the last is the truth).
 */
export async function settle(
  bench: Bench,
  host: string,
  serves: Serves,
  { windowMs = 10_000, everyMs = 500 }: { windowMs?: number; everyMs?: number } = {},
): Promise<HostSample[]> {
  const samples: HostSample[] = [];
  const end = Date.now() + windowMs;
  let agreeing = 0;
  for (;;) {
    const sample = await lookAtHost(bench, host);
    samples.push(sample);
    agreeing = agrees(serves, servedBy(sample)) ? agreeing + 1 : 0;
    if (agreeing >= 2 || Date.now() >= end) return samples;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The final line broadcast from a card's thread (the swap's last message), once posted. */
export function finalLineOf(bench: Bench, cardTs: string): SlackMessage | undefined {
  return bench.slack.thread(CHANNEL, cardTs).findLast((m) => m.reply_broadcast === true);
}

/** The swap's last message, read as a claim. */
export function finalLineClaim(message: SlackMessage, oldModel: string): FinalLineClaim {
  return readFinalLine(message.text, Math.round(Number(message.ts) * 1000), oldModel);
}

/** The card's outcome as it reads now. */
export function cardOutcome(bench: Bench, cardTs: string): Outcome | "in progress" | undefined {
  const card = bench.slack.message(CHANNEL, cardTs);
  return card === undefined
    ? undefined
    : readCardOutcome(`${card.text}\n${JSON.stringify(card.blocks ?? [])}`);
}

/**
 * `/llm history <host> --limit 3`, asked in the channel as a user would; the newest row of `model` (a
 * second swap the campaign asked for may be newer), else the newest. When the bot does
 * not answer within `timeoutMs` (a frozen worker holds the command's job until its lock lapses, about a
 * minute), the same row from the store's history API, as `/llm history` renders it (`via` says which).
 */
export async function ledgerRow(
  bench: Bench,
  swaps: SwapDriver,
  host: string,
  model: string,
  timeoutMs = 20_000,
): Promise<{ row: LedgerClaim; via: "history" | "store" } | undefined> {
  const slack = bench.slack;
  const before = slack.messages(CHANNEL).length;
  const title = `Swap history: ${host}`;
  const end = Date.now() + timeoutMs;
  // a command the bot could not take (its queue away: Redis restarting) is asked again
  while (Date.now() < end) {
    const ack = await slack.command(USERS.alice, `history ${host} --limit 3`, { channel: CHANNEL });
    if (ack.status === 200 && !/QUEUE_UNAVAILABLE|unavailable/i.test(ack.ackResponse?.text ?? "")) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const answer = await until(
    () =>
      slack
        .messages(CHANNEL)
        .slice(before)
        .find((m) => m.text.startsWith(`${title} (`)),
    { what: `the answer to /llm history ${host}`, timeoutMs: Math.max(1000, end - Date.now()) },
  ).catch(() => undefined);
  const row = answer === undefined ? undefined : readLedger(answer.text, host, model);
  if (row !== undefined) return { row, via: "history" };
  const { records } = await (await swaps.store()).swaps.history({ host, limit: 3 }).catch(() => ({
    records: [],
  }));
  const rows = records.map((r) => historyRow(r));
  const stored = rows.find((r) => r.model === model) ?? rows[0];
  if (stored === undefined) return undefined;
  const outcome = stored.outcome === "planned" ? undefined : stored.outcome;
  return { row: { outcome, model: stored.model }, via: "store" };
}
