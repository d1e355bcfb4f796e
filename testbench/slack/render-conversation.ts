import type { Block, EphemeralMessage, JsonObject, SlackFile, SlackMessage, UserAction } from "./types.ts";
import type { ChannelState, SlackWorkspace } from "./workspace.ts";

/**
 * Renders a channel as a terminal transcript: messages in order with their threads indented below,
 * Block Kit turned into text (header underlined, sections, two-column fields, context, dividers,
 * buttons as `[ Approve ]`), emoji shortcodes left as they are, edits shown as the final version with
 * "(edited N×)", ephemerals marked "(only visible to @user)", and what simulated users did (commands,
 * clicks) in between.
 */

export interface RenderOptions {
  /** Show HH:MM:SS before each entry (default true; turn off for stable snapshots). */
  times?: boolean;
  /** ANSI bold/dim (default false). */
  color?: boolean;
  /** Width of dividers and header underlines (default 60). */
  width?: number;
}

interface Style {
  bold(s: string): string;
  dim(s: string): string;
}

function style(color: boolean): Style {
  if (!color) return { bold: (s) => s, dim: (s) => s };
  return { bold: (s) => `\u001b[1m${s}\u001b[22m`, dim: (s) => `\u001b[2m${s}\u001b[22m` };
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  return isObject(value) && typeof value.text === "string" ? value.text : "";
}

function clock(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** Slack mrkdwn references made readable: mentions, channel links, groups, links, entities. */
export function formatMrkdwn(text: string, ws: SlackWorkspace): string {
  return text
    .replace(
      /<@([UW][A-Z0-9]+)(?:\|([^>]+))?>/g,
      (_m, id: string, label?: string) => `@${label ?? ws.userName(id)}`,
    )
    .replace(/<#([CGD][A-Z0-9]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) => {
      const name = label !== undefined && label !== "" ? label : (ws.resolveChannel(id)?.name ?? id);
      return `#${name}`;
    })
    .replace(/<!subteam\^([A-Z0-9]+)(?:\|([^>]+))?>/g, (_m, id: string, label?: string) => {
      if (label !== undefined) return label.startsWith("@") ? label : `@${label}`;
      const group = ws.userGroups.find((g) => g.id === id);
      return `@${group?.handle ?? id}`;
    })
    .replace(/<!(here|channel|everyone)(?:\|[^>]*)?>/g, (_m, what: string) => `@${what}`)
    .replace(/<!date\^\d+\^[^|>]*\|([^>]+)>/g, (_m, fallback: string) => fallback)
    .replace(
      /<((?:https?|mailto):[^|>]+)\|([^>]+)>/g,
      (_m, url: string, label: string) => `${label} (${url})`,
    )
    .replace(/<((?:https?|mailto):[^>]+)>/g, (_m, url: string) => url)
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

function elementLabel(element: unknown, ws: SlackWorkspace): string {
  if (!isObject(element)) return "";
  switch (element.type) {
    case "button":
      return `[ ${textOf(element.text)} ]`;
    case "static_select":
    case "external_select":
    case "users_select":
    case "conversations_select":
    case "channels_select":
    case "multi_static_select": {
      const chosen = isObject(element.initial_option) ? textOf(element.initial_option.text) : "";
      return `[ ${chosen || textOf(element.placeholder) || "Select"} ▾ ]`;
    }
    case "overflow":
      return "[ ⋯ ]";
    case "datepicker":
      return `[ ${typeof element.initial_date === "string" ? element.initial_date : "date"} ]`;
    case "image":
      return `[${typeof element.alt_text === "string" ? element.alt_text : "image"}]`;
    case "mrkdwn":
      return formatMrkdwn(textOf(element), ws);
    case "plain_text":
      return textOf(element);
    default:
      return `[ ${String(element.type)} ]`;
  }
}

function richText(elements: unknown, ws: SlackWorkspace): string {
  if (!Array.isArray(elements)) return "";
  return elements
    .map((el) => {
      if (!isObject(el)) return "";
      switch (el.type) {
        case "text":
          return typeof el.text === "string" ? el.text : "";
        case "link":
          return typeof el.text === "string" ? `${el.text} (${String(el.url)})` : String(el.url);
        case "user":
          return `@${ws.userName(String(el.user_id))}`;
        case "channel":
          return `#${ws.resolveChannel(String(el.channel_id))?.name ?? String(el.channel_id)}`;
        case "usergroup":
          return `@${ws.userGroups.find((g) => g.id === el.usergroup_id)?.handle ?? String(el.usergroup_id)}`;
        case "emoji":
          return `:${String(el.name)}:`;
        case "broadcast":
          return `@${String(el.range)}`;
        default:
          return "";
      }
    })
    .join("");
}

function richTextBlock(block: Block, ws: SlackWorkspace): string[] {
  const lines: string[] = [];
  const sections = Array.isArray(block.elements) ? block.elements : [];
  for (const section of sections) {
    if (!isObject(section)) continue;
    const content = richText(section.elements, ws);
    switch (section.type) {
      case "rich_text_preformatted":
        lines.push("```", ...content.split("\n"), "```");
        break;
      case "rich_text_quote":
        lines.push(...content.split("\n").map((l) => `> ${l}`));
        break;
      case "rich_text_list": {
        const items = Array.isArray(section.elements) ? section.elements : [];
        items.forEach((item, i) => {
          const bullet = section.style === "ordered" ? `${i + 1}.` : "•";
          lines.push(`${bullet} ${isObject(item) ? richText(item.elements, ws) : ""}`);
        });
        break;
      }
      default:
        lines.push(...content.split("\n"));
    }
  }
  return lines;
}

function fieldColumns(fields: string[], width: number): string[] {
  const multiline = fields.some((f) => f.includes("\n"));
  const half = Math.floor(width / 2);
  if (multiline || fields.some((f) => f.length > half - 2)) return fields.flatMap((f) => f.split("\n"));
  const lines: string[] = [];
  for (let i = 0; i < fields.length; i += 2) {
    const left = fields[i] ?? "";
    const right = fields[i + 1];
    lines.push(right === undefined ? left : `${left.padEnd(half)}${right}`);
  }
  return lines;
}

/** Block Kit as plain text lines. */
export function renderBlocks(blocks: Block[], ws: SlackWorkspace, opts: RenderOptions = {}): string[] {
  const width = opts.width ?? 60;
  const st = style(opts.color ?? false);
  const lines: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case "header": {
        const text = textOf(block.text);
        lines.push(st.bold(text), "═".repeat(Math.min(width, Math.max(3, text.length))));
        break;
      }
      case "section": {
        const body = block.text === undefined ? [] : formatMrkdwn(textOf(block.text), ws).split("\n");
        if (Array.isArray(block.fields)) {
          body.push(
            ...fieldColumns(
              block.fields.map((f) => formatMrkdwn(textOf(f), ws)),
              width,
            ),
          );
        }
        if (block.accessory !== undefined) {
          const label = elementLabel(block.accessory, ws);
          const last = body.pop();
          body.push(last === undefined ? label : `${last}   ${label}`);
        }
        lines.push(...body);
        break;
      }
      case "divider":
        lines.push(st.dim("─".repeat(width)));
        break;
      case "context": {
        const parts = (Array.isArray(block.elements) ? block.elements : []).map((e) => elementLabel(e, ws));
        lines.push(
          ...parts
            .join("  ·  ")
            .split("\n")
            .map((l) => st.dim(`› ${l}`)),
        );
        break;
      }
      case "actions":
        lines.push(
          (Array.isArray(block.elements) ? block.elements : []).map((e) => elementLabel(e, ws)).join("  "),
        );
        break;
      case "image":
        lines.push(`[image: ${typeof block.alt_text === "string" ? block.alt_text : "image"}]`);
        break;
      case "rich_text":
        lines.push(...richTextBlock(block, ws));
        break;
      case "markdown":
        lines.push(...formatMrkdwn(typeof block.text === "string" ? block.text : "", ws).split("\n"));
        break;
      case "table": {
        const rows = Array.isArray(block.rows) ? block.rows : [];
        for (const row of rows) {
          if (!Array.isArray(row)) continue;
          lines.push(
            row
              .map((cell) =>
                isObject(cell) && cell.type === "rich_text"
                  ? richTextBlock(cell as Block, ws).join(" ")
                  : textOf(cell),
              )
              .join(" | "),
          );
        }
        break;
      }
      case "input":
        lines.push(`[input: ${textOf(block.label)}]`);
        break;
      case "video":
        lines.push(`[video: ${textOf(block.title)}]`);
        break;
      default:
        lines.push(`[${block.type}]`);
    }
  }
  return lines;
}

function attachmentLines(attachments: JsonObject[], ws: SlackWorkspace, opts: RenderOptions): string[] {
  const lines: string[] = [];
  for (const a of attachments) {
    const inner: string[] = [];
    for (const key of ["pretext", "title", "text"]) {
      const value = a[key];
      if (typeof value === "string" && value !== "") inner.push(...formatMrkdwn(value, ws).split("\n"));
    }
    if (Array.isArray(a.fields)) {
      for (const f of a.fields) {
        if (isObject(f)) inner.push(`${String(f.title ?? "")}: ${formatMrkdwn(String(f.value ?? ""), ws)}`);
      }
    }
    if (Array.isArray(a.blocks)) inner.push(...renderBlocks(a.blocks as Block[], ws, opts));
    if (typeof a.footer === "string") inner.push(a.footer);
    if (inner.length === 0 && typeof a.fallback === "string") inner.push(a.fallback);
    lines.push(...inner.map((l) => `▌ ${l}`));
  }
  return lines;
}

function sizeLabel(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function fileLines(files: SlackFile[]): string[] {
  return files.map((f) =>
    f.original_w !== undefined && f.original_h !== undefined
      ? `[image: ${f.title || f.name} (${f.original_w}×${f.original_h} ${f.filetype.toUpperCase()})]`
      : `[file: ${f.title || f.name} (${f.mimetype}, ${sizeLabel(f.size)})]`,
  );
}

function bodyLines(
  content: { text: string; blocks?: Block[]; attachments?: JsonObject[]; files?: SlackFile[] },
  ws: SlackWorkspace,
  opts: RenderOptions,
): string[] {
  const lines: string[] = [];
  if (content.blocks !== undefined && content.blocks.length > 0)
    lines.push(...renderBlocks(content.blocks, ws, opts));
  else if (content.text !== "") lines.push(...formatMrkdwn(content.text, ws).split("\n"));
  if (content.attachments !== undefined) lines.push(...attachmentLines(content.attachments, ws, opts));
  if (content.files !== undefined) lines.push(...fileLines(content.files));
  return lines;
}

/** The first visible line of a message as rendered (for "clicked … on" lines). */
export function firstLine(
  content: { text: string; blocks?: Block[]; attachments?: JsonObject[]; files?: SlackFile[] },
  ws: SlackWorkspace,
): string | undefined {
  return bodyLines(content, ws, {}).find((l) => l.trim() !== "");
}

type Entry =
  | { kind: "message"; seq: number; message: SlackMessage }
  | { kind: "ephemeral"; seq: number; ephemeral: EphemeralMessage }
  | { kind: "action"; seq: number; action: UserAction };

interface Ctx {
  ws: SlackWorkspace;
  channel: ChannelState;
  opts: RenderOptions;
  st: Style;
}

function author(ctx: Ctx, userId: string, fromBot: boolean): string {
  if (fromBot) return `${ctx.st.bold(ctx.ws.botName)} [APP]`;
  return ctx.st.bold(`@${ctx.ws.userName(userId)}`);
}

function headLine(ctx: Ctx, at: number, who: string, meta: string[]): string {
  const time = ctx.opts.times === false ? "" : `${ctx.st.dim(clock(at))}  `;
  const tail = meta.length > 0 ? `  ${ctx.st.dim(meta.join(" "))}` : "";
  return `${time}${who}${tail}`;
}

const BODY_INDENT = "    ";

function renderEntry(ctx: Ctx, entry: Entry, inThread: boolean): string[] {
  const { ws } = ctx;
  if (entry.kind === "action") {
    const a = entry.action;
    const who = ctx.st.bold(`@${ws.userName(a.user)}`);
    if (a.kind === "command") return [headLine(ctx, a.at, who, []).concat(`  ran ${a.text}`)];
    if (a.kind === "click") {
      const first = a.messageSnippet;
      const quoted = first === undefined ? "" : first.length > 48 ? `${first.slice(0, 47)}…` : first;
      const on = quoted === "" ? "" : ` on "${quoted}"`;
      return [headLine(ctx, a.at, who, []).concat(`  clicked [ ${a.text} ]${on}`)];
    }
    return [];
  }
  if (entry.kind === "ephemeral") {
    const e = entry.ephemeral;
    const who = e.from === "slackbot" ? ctx.st.bold("Slackbot") : author(ctx, ws.botUserId, true);
    const meta = [`(only visible to @${ws.userName(e.user)})`];
    if (e.edits > 0) meta.push(`(edited ${e.edits}×)`);
    return [headLine(ctx, e.at, who, meta), ...bodyLines(e, ws, ctx.opts).map((l) => BODY_INDENT + l)];
  }
  const m = entry.message;
  const meta: string[] = [];
  if (m.edits > 0) meta.push(`(edited ${m.edits}×)`);
  if (!inThread && m.reply_broadcast === true) meta.push("(thread reply, also sent to the channel)");
  const lines = [headLine(ctx, m.postedAt, author(ctx, m.user, m.bot_id !== undefined), meta)];
  lines.push(...bodyLines(m, ws, ctx.opts).map((l) => BODY_INDENT + l));
  if (m.reactions.length > 0) {
    const reactions = m.reactions
      .map((r) => `:${r.name}: ${r.count} (${r.users.map((u) => `@${ws.userName(u)}`).join(", ")})`)
      .join("   ");
    lines.push(BODY_INDENT + reactions);
  }
  return lines;
}

function threadEntries(ctx: Ctx, parentTs: string): Entry[] {
  const entries: Entry[] = [
    ...ctx.ws
      .replies(ctx.channel.id, parentTs)
      .map((message): Entry => ({ kind: "message", seq: message.seq, message })),
    ...ctx.ws.ephemerals
      .filter((e) => e.channel === ctx.channel.id && e.thread_ts === parentTs)
      .map((ephemeral): Entry => ({ kind: "ephemeral", seq: ephemeral.seq, ephemeral })),
  ];
  return entries.sort((a, b) => a.seq - b.seq);
}

/** One channel (id or "#name") as a readable transcript; "" when it has nothing to show. */
export function renderConversation(
  emulator: { workspace: SlackWorkspace },
  channel: string,
  opts: RenderOptions = {},
): string {
  const ws = emulator.workspace;
  const ch = ws.resolveChannel(channel);
  if (ch === undefined) return "";
  const st = style(opts.color ?? false);
  const ctx: Ctx = { ws, channel: ch, opts, st };
  const topLevelTs = new Set(ws.topLevel(ch.id).map((m) => m.ts));
  const entries: Entry[] = [
    ...ws.topLevel(ch.id).map((message): Entry => ({ kind: "message", seq: message.seq, message })),
    ...ws.ephemerals
      .filter((e) => e.channel === ch.id && (e.thread_ts === undefined || !hasParent(ws, ch.id, e.thread_ts)))
      .map((ephemeral): Entry => ({ kind: "ephemeral", seq: ephemeral.seq, ephemeral })),
    ...ws.userActions
      .filter((a) => a.channel === ch.id && (a.kind === "command" || a.kind === "click"))
      .map((action): Entry => ({ kind: "action", seq: action.seq, action })),
    // replies whose parent is gone or unknown still deserve a place
    ...ws
      .allMessages(ch.id)
      .filter((m) => m.thread_ts !== undefined && m.thread_ts !== m.ts && !hasParent(ws, ch.id, m.thread_ts))
      .filter((m) => !topLevelTs.has(m.ts))
      .map((message): Entry => ({ kind: "message", seq: message.seq, message })),
  ].sort((a, b) => a.seq - b.seq);
  if (entries.length === 0) return "";

  const title = ch.isIm ? `DM with @${ws.userName(ch.imUser ?? "")}` : `#${ch.name}`;
  const width = opts.width ?? 60;
  const out: string[] = [st.bold(`━━ ${title} `.padEnd(width + 4, "━"))];
  for (const entry of entries) {
    out.push(...renderEntry(ctx, entry, false));
    if (
      entry.kind === "message" &&
      (entry.message.thread_ts === undefined || entry.message.thread_ts === entry.message.ts)
    ) {
      const thread = threadEntries(ctx, entry.message.ts);
      if (thread.length > 0) {
        const replies = thread.filter((t) => t.kind === "message").length;
        out.push(`${BODY_INDENT}${st.dim(`↳ thread: ${replies} ${replies === 1 ? "reply" : "replies"}`)}`);
        for (const item of thread)
          out.push(...renderEntry(ctx, item, true).map((l) => `${BODY_INDENT}│ ${l}`));
      }
    }
  }
  return out.join("\n");
}

function hasParent(ws: SlackWorkspace, channel: string, threadTs: string): boolean {
  const parent = ws.findMessage(channel, threadTs);
  return parent !== undefined && (parent.thread_ts === undefined || parent.thread_ts === parent.ts);
}

/** Every channel that has something to show, one after the other. */
export function renderAllConversations(
  emulator: { workspace: SlackWorkspace },
  opts: RenderOptions = {},
): string {
  return emulator.workspace
    .knownChannels()
    .map((c) => renderConversation(emulator, c.id, opts))
    .filter((s) => s !== "")
    .join("\n\n");
}
