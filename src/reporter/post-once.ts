import type { SlackMessage } from "../slack/blocks.ts";
import type { PostMetadata } from "../slack/post-types.ts";
import { isSlackApiError } from "../slack/slack-api-error.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import type { ReportContext } from "./report-context.ts";

/** What a post once needs of a report run: a swap's, or a rollout's (whose record shares these fields). */
export type PostContext = Pick<ReportContext, "swapId" | "state" | "deps" | "log" | "save" | "ended"> & {
  readonly record: Pick<SwapRecord, "channel" | "createdAt">;
};

/** The metadata event type of every message the reporter posts (its payload names the swap and the post). */
export const REPORT_EVENT_TYPE = "modelswap_report";

/**
 * Posts one message once. Its key names it (card number, event, part); Slack's copy carries the key in
 * its metadata. Before the post the key is noted as in flight, after it the ts is kept: a reporter that
 * dies in between leaves the note, and the next one asks Slack instead of posting a second copy.
 */
export async function postOnce(
  ctx: PostContext,
  key: string,
  msg: SlackMessage,
  options: { threadTs?: string; broadcast?: boolean; urgent?: boolean } = {},
): Promise<string> {
  const { state } = ctx;
  const done = state.posts[key];
  if (done !== undefined) return done;
  state.inFlight = { key, ...(options.threadTs === undefined ? {} : { threadTs: options.threadTs }) };
  await ctx.save();
  let ts: string;
  try {
    ts = await ctx.deps.poster.post(ctx.record.channel, msg, {
      ...options,
      urgent: options.urgent ?? ctx.ended(),
      metadata: metadata(ctx.swapId, key),
      tag: ctx.swapId,
    });
  } catch (error) {
    // Slack said no: nothing was posted (a timeout or a 5xx may have posted it: that one is looked for)
    if (isSlackApiError(error) && error.refused) {
      delete state.inFlight;
      await ctx.save();
    }
    throw error;
  }
  state.posts[key] = ts;
  delete state.inFlight;
  await ctx.save();
  return ts;
}

function metadata(swapId: string, key: string): PostMetadata {
  return { event_type: REPORT_EVENT_TYPE, event_payload: { swap: swapId, post: key } };
}

/** A post left in flight by a reporter that died: is it in Slack? Then it counts as posted. */
export async function settleInFlight(ctx: PostContext): Promise<void> {
  const { state, record, swapId } = ctx;
  const flying = state.inFlight;
  if (flying === undefined) return;
  let found: string | undefined;
  try {
    const messages = await ctx.deps.poster.read(
      record.channel,
      flying.threadTs === undefined
        ? { oldest: String(Date.parse(record.createdAt) / 1000 - 60) }
        : { threadTs: flying.threadTs },
    );
    found = messages.find(
      (m) =>
        m.metadata?.event_type === REPORT_EVENT_TYPE &&
        m.metadata.event_payload?.swap === swapId &&
        m.metadata.event_payload?.post === flying.key,
    )?.ts;
  } catch (error) {
    if (!isSlackApiError(error)) throw error;
    if (error.messageGone) found = undefined;
    else {
      // without the history scope Slack cannot be asked: the post is sent again (a duplicate at worst)
      ctx.log.warn(
        {
          post: flying.key,
          slackError: error.slackError,
          fix: "add channels:history (and groups:history) to the Slack app's scopes and reinstall it (manifest.yml)",
        },
        "cannot tell whether a post whose reporter died reached Slack; sending it again",
      );
    }
  }
  if (found !== undefined) {
    ctx.log.info(
      { post: flying.key, ts: found },
      "a post whose reporter died did reach Slack: kept, not sent again",
    );
    if (flying.key.startsWith("card:")) {
      state.cardTs = found;
      state.cards = Number(flying.key.slice("card:".length));
    } else state.posts[flying.key] = found;
  }
  delete state.inFlight;
  await ctx.save();
}
