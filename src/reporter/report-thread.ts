import { describeError } from "../errors.ts";
import { by } from "../grammar/person.ts";
import { context, message, type SlackMessage, section } from "../slack/blocks.ts";
import { isSlackApiError } from "../slack/slack-api-error.ts";
import type { StoredSwapEvent } from "../swap/swap-events.ts";
import { urgentFor } from "../swap/urgency.ts";
import { renderBenchmarkComparison } from "./benchmark-table.ts";
import { renderBenchmarkChart } from "./chart/benchmark-chart.ts";
import { postOnce } from "./post-once.ts";
import { isApprovalEvent, type PlanOutlet, postPlanEvent } from "./post-plan.ts";
import type { ReportContext } from "./report-context.ts";
import { threadReply } from "./thread-messages.ts";

/** The swap's thread under its card: one event's messages, or progress lines folded into one post. */

/** The messages of the event at the cursor, in the card's thread, each once. */
export async function showEvent(ctx: ReportContext, event: StoredSwapEvent): Promise<void> {
  const rollout = ctx.record.rollout;
  if (rollout !== undefined && isApprovalEvent(event) && event.type !== "planned") {
    // a rollout's host: its plan is shown and decided in the rollout's thread; here only that it may go
    if (event.type === "approval-decided" && event.approved) {
      const text = `✅ Its wave (${rollout.wave === 0 ? "the canary" : `wave ${rollout.wave + 1}`}) of rollout \`${rollout.id}\` started: approved${by(event.by)} on the rollout's plan.`;
      await reply(ctx, "message", message(text, [section(text)]));
    }
    return;
  }
  if (isApprovalEvent(event)) {
    await postPlanEvent(event, ctx.record, ctx.state.plans, planOutlet(ctx), ctx.deps.approvers);
    return;
  }
  if (event.type === "benchmarked") {
    await reply(
      ctx,
      "table",
      renderBenchmarkComparison(event.current, event.previous, {
        engine: event.engine,
        model: swapModel(ctx),
      }),
    );
    const chartKey = `${ctx.state.cards}:${ctx.state.cursor}:chart`;
    if (ctx.state.posts[chartKey] === undefined) {
      await shareChart(ctx, event);
      ctx.state.posts[chartKey] = "uploaded";
    }
    return;
  }
  const said = threadReply(event, ctx.record);
  if (said === undefined) return;
  await replyOrSayRefused(ctx, said.message, said.broadcast === true, `a ${event.type} message`, {
    event: event.type,
  });
}

/** Progress lines that piled up while the channel was busy, in order, as one thread message. */
export async function showFolded(ctx: ReportContext, events: readonly StoredSwapEvent[]): Promise<void> {
  const replies = events.flatMap((event) => threadReply(event, ctx.record) ?? []);
  const folded = message(
    replies.map((r) => r.message.text).join("\n"),
    replies.flatMap((r) => r.message.blocks ?? []),
  );
  await replyOrSayRefused(ctx, folded, false, `${events.length} progress messages`, {
    events: events.map((e) => e.type),
  });
}

/**
 * The event's message in the thread; one Slack refuses as such (a bad request) would be refused forever,
 * so `what` it was is said in its place, and the thread goes on.
 */
async function replyOrSayRefused(
  ctx: ReportContext,
  msg: SlackMessage,
  broadcast: boolean,
  what: string,
  logged: Record<string, unknown>,
): Promise<void> {
  try {
    await reply(ctx, "message", msg, broadcast);
  } catch (error) {
    if (!isSlackApiError(error) || !error.badRequest) throw error;
    ctx.log.error({ ...logged, err: error.slackError }, "Slack refused a thread message");
    const text = `⚠️ (${what} could not be shown: Slack said ${error.slackError})`;
    await reply(ctx, "refused", message(text, [context(text)]));
  }
}

/**
 * A reply in the card's thread, once; `part` tells apart the messages of one event. A plan (someone must
 * approve it before the swap can go on) and whatever an ended swap still has to say go ahead of other
 * swaps' progress messages when Slack's pace makes them queue.
 */
function reply(ctx: ReportContext, part: string, msg: SlackMessage, broadcast = false): Promise<string> {
  const { state } = ctx;
  return postOnce(ctx, `${state.cards}:${state.cursor}:${part}`, msg, {
    threadTs: state.cardTs!,
    broadcast,
    urgent: urgentFor(ctx.record, part === "plan" || ctx.ended()),
  });
}

function planOutlet(ctx: ReportContext): PlanOutlet {
  const { poster, store } = ctx.deps;
  const { channel, id } = ctx.record;
  let said = 0;
  return {
    post: (msg) => reply(ctx, "plan", msg),
    postDetails: async (msg) => {
      await reply(ctx, "plan-details", msg);
    },
    update: async (ts, msg) => {
      try {
        await poster.update(channel, ts, msg, { urgent: true });
      } catch (error) {
        // a plan message someone deleted: its state is shown by the card and the thread; nothing to fix
        if (!isSlackApiError(error) || !error.messageGone) throw error;
      }
    },
    react: (ts, name) => poster.react(channel, ts, name, true),
    unreact: async (ts, name) => {
      // cosmetic (the plan's text says it was decided): not worth holding a running swap's reporter
      if (!ctx.ended() && poster.unreactBacklog() > 0) {
        ctx.state.unreacts.push({ ts, name });
        await ctx.save();
        return;
      }
      await poster.unreact(channel, ts, name, true);
    },
    index: async (ts, planHash) => {
      const ttl = store.swaps.ttlMs({ outcome: "succeeded" }) ?? 86_400_000;
      await store.approvals.indexPlanMessage(channel, ts, { swapId: id, planHash }, ttl);
    },
    say: async (text) => {
      said += 1;
      await reply(ctx, `say-${said}`, message(text, [context(text)]));
    },
    remember: () => ctx.save(),
  };
}

/** The model this swap serves, `org/name@sha7` once the plan has pinned its commit. */
function swapModel(ctx: ReportContext): string {
  const { plan, request } = ctx.record;
  const sha = plan?.model.sha.slice(0, 7);
  return `${plan?.model.repo ?? request.model.repo}${sha ? `@${sha}` : ""}`;
}

/** The chart under the table; best effort (no files:write scope, an upload refused): the table has the numbers. */
async function shareChart(
  ctx: ReportContext,
  event: Extract<StoredSwapEvent, { type: "benchmarked" }>,
): Promise<void> {
  const { record } = ctx;
  const model = swapModel(ctx);
  try {
    const chart = await renderBenchmarkChart(event.current, event.previous, {
      model,
      host: record.host,
      swapId: record.id,
    });
    const comment =
      event.previous === undefined
        ? `📊 Benchmark of \`${model}\` on ${record.host} (no earlier numbers to compare with)`
        : `📊 Benchmark of \`${model}\` vs \`${event.previous.model}\` on ${record.host}`;
    const file = await ctx.deps.poster.upload(
      record.channel,
      { bytes: chart.png, filename: chart.filename, title: chart.title, altText: chart.altText },
      { threadTs: ctx.state.cardTs!, comment, urgent: urgentFor(record, ctx.ended()), tag: ctx.swapId },
    );
    ctx.log.info({ file, bytes: chart.png.length }, "benchmark chart uploaded");
  } catch (error) {
    ctx.log.warn(
      { err: describeError(error) },
      "could not upload the benchmark chart; the table in the thread has the numbers",
    );
  }
}
