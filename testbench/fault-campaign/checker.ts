import type { Schedule } from "./schedule.ts";

/*
 * The campaign's checker, after Jepsen's: it never asks the bot how things went. It takes what the bot
 * *said* — the swap's last message broadcast from its thread, its card, and its row in `/llm history` —
 * and what the host *did* — which model a client gets through the front door (or on the serving port),
 * which units run, which slot is ready — and reports every disagreement as a lie. It also judges the end
 * state against the injected fault: nothing serving (or only a NaN model serving) although one of the two
 * models could still serve is an outage caused by the bot. Pure functions of what observe.ts gathered,
 * so each rule has a unit test (test/unit/campaign-checker.test.ts).
 */

export type Outcome = "succeeded" | "rolled_back" | "failed" | "cancelled" | "rejected" | "expired";

/** What a message says the host serves after the swap. */
export type Serves = { kind: "model"; model: string } | { kind: "nothing" } | { kind: "unknown" };

/** The swap's last message, as read from Slack. */
export interface FinalLineClaim {
  text: string;
  outcome: Outcome | undefined;
  serves: Serves;
  /** When the claim was made: the "Checked at HH:MM:SS UTC" it gives (to the second), else when it was posted. */
  at: number;
  /** Whether `at` comes from the message's own "Checked at" (a final check of the host). */
  checked: boolean;
}

/** The swap's newest row of `/llm history <host>`. */
export interface LedgerClaim {
  outcome: Outcome | "in progress" | undefined;
  model: string | undefined;
}

/** One look at the host, as a client and an operator would take it. */
export interface HostSample {
  at: number;
  /** A completion request where clients send theirs (the front door, else the serving port). */
  answer: { status: number; model?: string; nan?: boolean; error?: string };
  /** Units whose state is active or activating, with their main process. */
  units: { unit: string; activeState: string; subState: string; mainPid: number }[];
  /** The front door's slot states, when the host has one. */
  slots?: Record<string, string>;
}

/** What clients got from a sample: a sane model, a model answering NaN, or nothing. */
export type Served =
  | { kind: "model"; model: string }
  | { kind: "garbage"; model: string }
  | { kind: "nothing"; why: string };

export interface CheckInput {
  schedule: Schedule;
  /** The model the swap asked for, and the one clients got before it. */
  newModel: string;
  oldModel: string;
  /** Whether the fault was injected, and when (ms since the epoch). */
  struckAt: number | undefined;
  finalLine: FinalLineClaim | undefined;
  /** The card's outcome word, mapped (✅ Swapped → succeeded, …). */
  card: Outcome | "in progress" | undefined;
  ledger: LedgerClaim | undefined;
  /** Looks at the host after the final line, oldest first; the last one is the settled truth. */
  samples: HostSample[];
  /** Slot states seen during the swap with no slot ready (front-door hosts). */
  withoutReadySlot: Record<string, string>[];
  /** Top-level cards the swap left in the channel (one, always). */
  cards: number;
  /**
   * A second `/llm swap` of the host, asked while this swap ran: what the bot answered — `refused` (the
   * host is busy: one swap per host), `queued` (a second swap on the host), `unknown` (it could not tell:
   * its queue away), or undefined when not asked.
   */
  secondSwap?: { answer: "refused" | "queued" | "unknown"; text: string };
  /** What the bot first answered the `/llm swap`, when that did not say it was queued (yet it was). */
  requestAnswered?: string;
}

export type LieKind = "final-line" | "false-alarm" | "ledger" | "ledger-vs-final-line" | "card-vs-final-line";

export interface Lie {
  kind: LieKind;
  said: string;
  served: string;
}

export interface Verdict {
  /** What the host served at the end (the last look). */
  served: Served;
  lies: Lie[];
  /** Disagreements where the fault came after the bot's last look at the host (its "Checked at"): stale, not lies. */
  stale: Lie[];
  outageByBot: boolean;
  /** No final line came within the schedule's deadline: a swap that never ended (liveness, not a lie). */
  unfinished: boolean;
  /** Broken invariants that are not about the outcome: the front door pointing at nothing, two cards. */
  invariants: string[];
  /** Units left running besides the one that serves (GPU memory held for nothing). */
  strayUnits: string[];
}

// --------------------------------------------------------------------------------- reading the claims

const OUTCOME_WORDS: [RegExp, Outcome][] = [
  [/^✅/u, "succeeded"],
  [/^↩️/u, "rolled_back"],
  [/^(<!channel> )?🚨|^❌/u, "failed"],
  [/^✋/u, "cancelled"],
  [/^🚫/u, "rejected"],
  [/^⌛/u, "expired"],
];

/**
 * Reads a swap's final line (src/reporter/final-line.ts's words, and any "Checked at HH:MM:SS UTC" a
 * final check adds): which outcome it gives and what it says the host serves. "now serves X" names X;
 * "serves nothing" (the page) names nothing; a rollback, a failure that changed nothing, a cancel name the
 * model before. `postedAt` is the message's own time.
 */
export function readFinalLine(text: string, postedAt: number, oldModel: string): FinalLineClaim {
  const plain = text.replace(/\*/g, "");
  const outcome = OUTCOME_WORDS.find(([re]) => re.test(plain.trim()))?.[1];
  let serves: Serves = { kind: "unknown" };
  const now = /now serves ([^\s@(`]+)/u.exec(plain);
  if (/serves nothing|nothing serves|nothing is serving/i.test(plain)) serves = { kind: "nothing" };
  else if (now !== null) serves = { kind: "model", model: now[1]! };
  else if (outcome !== undefined && outcome !== "succeeded") serves = { kind: "model", model: oldModel };
  const checked = /Checked at (\d{2}):(\d{2}):(\d{2}) UTC/.exec(plain);
  let at = postedAt;
  if (checked !== null) {
    const day = new Date(postedAt);
    const stamp = Date.UTC(
      day.getUTCFullYear(),
      day.getUTCMonth(),
      day.getUTCDate(),
      Number(checked[1]),
      Number(checked[2]),
      Number(checked[3]),
    );
    // a check a moment before midnight, posted after it
    at = stamp > postedAt + 60_000 ? stamp - 86_400_000 : stamp;
  }
  return { text, outcome, serves, at, checked: checked !== null };
}

/** The card's outcome from its text (src/reporter/swap-card.ts: "✅ Swapped", "↩️ Rolled back", …). */
export function readCardOutcome(text: string): Outcome | "in progress" {
  if (/Swapped/.test(text)) return "succeeded";
  if (/Rolled back/.test(text)) return "rolled_back";
  if (/Cancelled/.test(text)) return "cancelled";
  if (/Failed|serves nothing/i.test(text)) return "failed";
  if (/Rejected/.test(text)) return "rejected";
  if (/Expired/.test(text)) return "expired";
  return "in progress";
}

/**
 * The newest row for `host` in `/llm history`'s message text (its fallback: one line per swap,
 * "2025-06-01 14:03 UTC gpu-1 succeeded sim-org/x@abc1234", newest first) — the newest of `model` when
 * given and listed.
 */
export function readLedger(text: string, host: string, model?: string): LedgerClaim | undefined {
  const rows: LedgerClaim[] = [];
  for (const line of text.split("\n")) {
    const m = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC (\S+) (.+?) (\S+)$/.exec(line.trim());
    if (m === null || m[1] !== host) continue;
    rows.push({ outcome: m[2] as LedgerClaim["outcome"], model: m[3]!.replace(/@[0-9a-f]{7}$/, "") });
  }
  return rows.find((r) => r.model === model) ?? rows[0];
}

// --------------------------------------------------------------------------------- the host's truth

/** What clients got from one look. */
export function servedBy(sample: HostSample): Served {
  const { answer } = sample;
  if (answer.status === 200 && answer.model !== undefined)
    return answer.nan === true
      ? { kind: "garbage", model: answer.model }
      : { kind: "model", model: answer.model };
  return {
    kind: "nothing",
    why: answer.status === 0 ? (answer.error ?? "no answer") : `HTTP ${answer.status}`,
  };
}

export function servedText(served: Served): string {
  if (served.kind === "model") return `clients get ${served.model}`;
  if (served.kind === "garbage") return `clients get NaN output (!!!!) from ${served.model}`;
  return `nothing answers clients (${served.why})`;
}

function servesText(serves: Serves): string {
  if (serves.kind === "model") return `serves ${serves.model}`;
  if (serves.kind === "nothing") return "serves nothing";
  return "(says nothing about what serves)";
}

/** Whether a look agrees with a claim of what serves. */
export function agrees(serves: Serves, served: Served): boolean {
  if (serves.kind === "unknown") return true;
  if (serves.kind === "nothing") return served.kind !== "model";
  return served.kind === "model" && served.model === serves.model;
}

/**
 * Which of the two models could still serve under the schedule's fault, had the bot done the right
 * thing: a crash-looped or NaN model cannot; every other fault (workers, SSH, Slack, Redis, a unit
 * killed once) leaves both servable.
 */
export function servable(schedule: Schedule, struck: boolean): { old: boolean; new: boolean } {
  if (!struck) return { old: true, new: true };
  if (schedule.fault === "nan") return { old: true, new: false };
  if (schedule.fault === "unit-crash-loop")
    return schedule.target === "new" ? { old: true, new: false } : { old: false, new: true };
  return { old: true, new: true };
}

// --------------------------------------------------------------------------------- the verdict

/** What the ledger's outcome implies the host serves: the new model, or the one before (or, failed, nothing). */
function ledgerAgrees(ledger: LedgerClaim, input: CheckInput, served: Served): boolean {
  switch (ledger.outcome) {
    case "succeeded":
      return served.kind === "model" && served.model === input.newModel;
    case "rolled_back":
    case "cancelled":
      return served.kind === "model" && served.model === input.oldModel;
    case "failed":
      // a failed swap says either that nothing changed (the old model) or, loudly, that nothing serves
      return !(served.kind === "model" && served.model === input.newModel);
    default:
      return false;
  }
}

export function judge(input: CheckInput): Verdict {
  const last = input.samples.at(-1);
  const served: Served =
    last === undefined ? { kind: "nothing", why: "the host was not looked at" } : servedBy(last);
  const found: Lie[] = [];
  const { finalLine, ledger } = input;
  if (finalLine !== undefined) {
    if (!agrees(finalLine.serves, served)) {
      found.push({
        kind: finalLine.serves.kind === "nothing" ? "false-alarm" : "final-line",
        said: `${finalLine.outcome ?? "?"}: ${servesText(finalLine.serves)} — “${clip(finalLine.text)}”`,
        served: servedText(served),
      });
    }
    if (input.card !== finalLine.outcome)
      found.push({
        kind: "card-vs-final-line",
        said: `card ${input.card ?? "none"}, final line ${finalLine.outcome ?? "?"}`,
        served: servedText(served),
      });
    if (ledger !== undefined && ledger.outcome !== finalLine.outcome)
      found.push({
        kind: "ledger-vs-final-line",
        said: `ledger ${ledger.outcome ?? "none"}, final line ${finalLine.outcome ?? "?"}`,
        served: servedText(served),
      });
  }
  if (finalLine === undefined) {
    // nothing was claimed yet: an unfinished swap, judged for liveness and outages only
  } else if (ledger === undefined) {
    // the bot did not answer /llm history in time: unavailable, not a lie (an invariant below)
  } else if (ledger.model !== input.newModel)
    found.push({
      kind: "ledger",
      said: `no ledger row for ${input.newModel} (newest: ${ledger.model ?? "none"} ${ledger.outcome ?? ""})`,
      served: servedText(served),
    });
  else if (!ledgerAgrees(ledger, input, served))
    found.push({ kind: "ledger", said: `ledger: ${ledger.outcome}`, served: servedText(served) });

  // A fault that came after the bot's last look at the host (its final check) makes a claim stale, not a
  // lie: only the host-changing faults can, and only with a "Checked at" to compare (or the post time).
  const hostFault = ["unit-kill", "unit-crash-loop", "nan"].includes(input.schedule.fault);
  const late =
    hostFault && input.struckAt !== undefined && finalLine !== undefined && input.struckAt >= finalLine.at;
  const lies = late ? [] : found;
  const stale = late ? found : [];

  const can = servable(input.schedule, input.struckAt !== undefined);
  const outageByBot = served.kind !== "model" && (can.old || can.new);

  const invariants: string[] = [];
  if (input.withoutReadySlot.length > 0)
    invariants.push(
      `the front door had no slot ready (${input.withoutReadySlot
        .slice(0, 3)
        .map((s) => JSON.stringify(s))
        .join(", ")})`,
    );
  if (input.cards !== 1) invariants.push(`${input.cards} cards for one swap`);
  if (input.requestAnswered !== undefined)
    invariants.push(
      `the /llm swap was answered “${clip(input.requestAnswered, 160)}”, yet the swap was queued and ran`,
    );
  if (input.secondSwap?.answer === "queued")
    invariants.push(
      `a second swap was queued on the host while this one ran: “${clip(input.secondSwap.text, 160)}”`,
    );
  if (finalLine !== undefined && ledger === undefined) invariants.push("the ledger has no row for the swap");
  if (input.card === "in progress" || ledger?.outcome === "in progress")
    invariants.push("the swap had not ended (card or ledger in progress)");
  const running = (last?.units ?? []).filter((u) => u.activeState === "active");
  const strayUnits = running.length > 1 ? running.map((u) => u.unit) : [];
  return { served, lies, stale, outageByBot, unfinished: finalLine === undefined, invariants, strayUnits };
}

function clip(text: string, n = 220): string {
  const flat = text.replace(/\s+/g, " ");
  return flat.length <= n ? flat : `${flat.slice(0, n - 1)}…`;
}
