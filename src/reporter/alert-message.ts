import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { duration, utcTime } from "../format-duration.ts";
import type { GpuInfo } from "../gpu/nvidia-smi.ts";
import { codeBlock, context, fields, header, message, type SlackMessage, section } from "../slack/blocks.ts";
import { gpuSummary, gpuTable } from "./status-message.ts";

/** Everything one health alert says. */
export interface AlertFacts {
  host: string;
  /** The served model (what modelswap last installed, else what the unit's ExecStart names). */
  model: string | undefined;
  unit: string;
  /** When the first failed check of this incident ran. */
  since: Date;
  /** Failed checks in a row so far. */
  failures: number;
  /** What the latest check saw ("`x.service` is failed; /health_generate: connection refused"). */
  failingCheck: string;
  /** What the first failed check saw, when it differs. */
  firstFailure: string;
  journalTail: readonly string[];
  journalProblem: string | undefined;
  gpus: readonly GpuInfo[];
  gpuProblem: string | undefined;
  intervalSeconds: number;
  recoveryThreshold: number;
  /** The check never reached the host: its serving state is unknown (a changed host key is a security event). */
  unreachable?: { code: string; message: string; fix: string };
}

/** What the recovery says. */
export interface RecoveryFacts {
  host: string;
  model: string | undefined;
  unit: string;
  since: Date;
  recoveredAt: Date;
}

/**
 * The one alert of an incident, posted to the channel: host, model, since when, the failing check, the
 * journal's last lines, an nvidia-smi snapshot, and what to do. (Its text never contains `<host>:` or an
 * arrow, which other messages' finders key on.)
 */
export function renderAlert(facts: AlertFacts): SlackMessage {
  if (facts.unreachable !== undefined) return renderUnreachable(facts, facts.unreachable);
  const model = facts.model === undefined ? "_unknown_" : `\`${escapeMrkdwn(facts.model)}\``;
  const title = `🚨 ${facts.host} is not serving`;
  const blocks = [
    header(title),
    fields([
      ["Host", facts.host],
      ["Model", model],
      ["Service", `\`${facts.unit}\``],
      ["Since", `${utcTime(facts.since)} (${facts.failures} failed checks in a row)`],
    ]),
    section(`*Failing check:* ${escapeMrkdwn(facts.failingCheck)}`),
  ];
  if (facts.firstFailure !== "" && facts.firstFailure !== facts.failingCheck) {
    blocks.push(context(`first failed check: ${escapeMrkdwn(facts.firstFailure)}`));
  }
  blocks.push(section(`*Last log lines of \`${facts.unit}\`*`));
  blocks.push(
    facts.journalTail.length > 0
      ? section(codeBlock(facts.journalTail))
      : section(`_${escapeMrkdwn(facts.journalProblem ?? "no journal lines")}_`),
  );
  blocks.push(section(`*nvidia-smi* — ${gpuSummary(facts.gpus, facts.gpuProblem)}`));
  blocks.push(
    facts.gpus.length > 0
      ? section(codeBlock(gpuTable(facts.gpus)))
      : section(`_${escapeMrkdwn(facts.gpuProblem ?? "no GPUs found")}_`),
  );
  blocks.push(
    section(
      `*What to do:* \`/llm status ${facts.host}\` for a fresh look and the journal; \`/llm rollback ${facts.host}\` to go back to the model served before the last swap (it asks for approval like any swap).`,
    ),
    context(
      `checked every ${facts.intervalSeconds} s · this is the only alert for this incident · one message follows once ${facts.host} has passed ${facts.recoveryThreshold} checks in a row`,
    ),
  );
  const text = `${title} (${facts.model ?? "unknown model"}, \`${facts.unit}\`) since ${utcTime(facts.since)}: ${facts.failingCheck}`;
  return message(text, blocks);
}

/**
 * The bot cannot look at the host: that is not "not serving" (the engine may be fine), and advice that
 * needs the host (a rollback) cannot work. A changed host key is worded as the security event it is:
 * what was seen against the pin, and how to check it.
 */
function renderUnreachable(facts: AlertFacts, why: NonNullable<AlertFacts["unreachable"]>): SlackMessage {
  const keyChanged = why.code === "HOST_KEY_MISMATCH";
  const title = keyChanged
    ? `🔐 ${facts.host}'s SSH host key changed: modelswap refuses to connect`
    : `⚠️ ${facts.host} is unreachable from modelswap: serving state unknown`;
  const model = facts.model === undefined ? "_unknown_" : `\`${escapeMrkdwn(facts.model)}\``;
  const blocks = [
    header(title),
    fields([
      ["Host", facts.host],
      ["Last known model", model],
      ["Service", `\`${facts.unit}\``],
      ["Since", `${utcTime(facts.since)} (${facts.failures} checks could not reach it)`],
    ]),
    section(
      `*${keyChanged ? "What changed" : "Why"}:* ${escapeMrkdwn(why.message)} (${escapeMrkdwn(why.code)})`,
    ),
    section(
      keyChanged
        ? `*What to do:* ${escapeMrkdwn(why.fix)}. Until then modelswap neither checks nor changes ${facts.host}; its clients may still be served.`
        : `*What to do:* ${escapeMrkdwn(why.fix)}. Its clients may still be served: check them directly; \`/llm status ${facts.host}\` once the bot reaches it again.`,
    ),
    context(
      `checked every ${facts.intervalSeconds} s · this is the only alert for this incident · one message follows once ${facts.host} has passed ${facts.recoveryThreshold} checks in a row`,
    ),
  ];
  const text = `${title} (${facts.model ?? "unknown model"}, \`${facts.unit}\`) since ${utcTime(facts.since)}: ${why.message}`;
  return message(text, blocks);
}

/** The incident's one recovery message, with the outage's length. */
export function renderRecovery(facts: RecoveryFacts): SlackMessage {
  const outage = formatOutage(facts.recoveredAt.getTime() - facts.since.getTime());
  const model = facts.model === undefined ? "" : ` \`${escapeMrkdwn(facts.model)}\``;
  const line = `✅ *${facts.host} is serving again*${model} (\`${facts.unit}\`) after an outage of *${outage}* (down since ${utcTime(facts.since)}, healthy again ${utcTime(facts.recoveredAt)}).`;
  const text = `✅ ${facts.host} is serving again after an outage of ${outage}`;
  return message(text, [section(line)]);
}

/** An outage's length for people: "48 s", "3 min 12 s", "2 h 5 min" (the one duration form). */
export function formatOutage(ms: number): string {
  return duration(ms / 1000);
}
