import type { ResponseUrlPost } from "./types.ts";
import type { ResponseUrlState, SlackWorkspace } from "./workspace.ts";

/** What Slack does with a response_url post: replace/delete the original, or show a new message. */
export function applyResponsePost(ws: SlackWorkspace, state: ResponseUrlState, post: ResponseUrlPost): void {
  const text = post.text ?? "";
  const threadTs = typeof post.body.thread_ts === "string" ? post.body.thread_ts : undefined;
  const original =
    state.messageTs !== undefined && state.ephemeral === undefined
      ? ws.findLiveMessage(state.channel, state.messageTs)
      : undefined;
  if (post.delete_original) {
    if (original !== undefined) ws.remove(original);
    const index = state.ephemeral === undefined ? -1 : ws.ephemerals.indexOf(state.ephemeral);
    if (index >= 0) ws.ephemerals.splice(index, 1);
    return;
  }
  if (post.replace_original) {
    if (original !== undefined) {
      ws.update(original, { text, blocks: post.blocks ?? [] });
      return;
    }
    const target =
      state.ephemeral ??
      [...ws.ephemerals]
        .reverse()
        .find((e) => e.source === "response_url" && e.channel === state.channel && e.user === state.user);
    if (target !== undefined) {
      target.text = text;
      if (post.blocks !== undefined) target.blocks = post.blocks;
      else delete target.blocks;
      target.edits += 1;
      return;
    }
  }
  if (post.response_type === "in_channel") {
    ws.post({
      channel: state.channel,
      user: ws.botUserId,
      text,
      ...(post.blocks !== undefined ? { blocks: post.blocks } : {}),
      ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
      source: "response_url",
      fromBot: true,
    });
  } else {
    ws.addEphemeral({
      from: "bot",
      channel: state.channel,
      user: state.user,
      text,
      ...(post.blocks !== undefined ? { blocks: post.blocks } : {}),
      ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
      source: "response_url",
    });
  }
}
