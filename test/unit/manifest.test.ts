import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

/** The manifest must grant what the code uses: read the code, not a list kept by hand. */
const ROOT = new URL("../..", import.meta.url).pathname;
const manifest = parse(readFileSync(join(ROOT, "manifest.yml"), "utf8")) as {
  oauth_config: { scopes: { bot: string[] } };
  settings: { event_subscriptions: { bot_events: string[] }; interactivity: { is_enabled: boolean } };
  features: { slash_commands: { command: string }[] };
};

/** Slack's documented scope for each Web API method the bot may call. */
const SCOPE_OF: Record<string, string | null> = {
  "chat.postMessage": "chat:write",
  "chat.update": "chat:write",
  "chat.postEphemeral": "chat:write",
  // the public channel's; a private channel's needs groups:history, granted as well
  "chat.delete": "chat:write",
  "conversations.history": "channels:history",
  "conversations.replies": "channels:history",
  // WebClient's helper: files.getUploadURLExternal, then files.completeUploadExternal, both files:write
  "files.uploadV2": "files:write",
  "files.getUploadURLExternal": "files:write",
  "files.completeUploadExternal": "files:write",
  "reactions.add": "reactions:write",
  "reactions.remove": "reactions:write",
  "usergroups.users.list": "usergroups:read",
  "auth.test": null,
  // "scopes": {} in Slack's method spec (api.slack.com/methods/chat.getPermalink): none is needed
  "chat.getPermalink": null,
};

/** Slack's documented scope for each event the bot subscribes to. */
const EVENT_SCOPE: Record<string, string> = { reaction_added: "reactions:read" };

/** Scopes granted with another, for the same calls in a private channel. */
const TWIN_OF: Record<string, string> = { "groups:history": "channels:history" };

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith(".ts") ? [readFileSync(path, "utf8")] : [];
  });
}

const code = ["src", "jobs", "commands"].flatMap((dir) => sources(join(ROOT, dir))).join("\n");

const methods = [...new Set([...code.matchAll(/client\.([a-z]+(?:\.[a-zA-Z0-9]+)+)\(/g)].map((m) => m[1]!))];
const events = [...code.matchAll(/app\.event\("([a-z_]+)"/g)].map((m) => m[1]!);

describe("manifest.yml", () => {
  it("grants a scope for every Web API method the code calls", () => {
    expect(methods.length).toBeGreaterThan(3);
    for (const method of methods) {
      expect(Object.keys(SCOPE_OF), `no known scope for ${method}`).toContain(method);
      const scope = SCOPE_OF[method];
      if (scope !== null && scope !== undefined)
        expect(manifest.oauth_config.scopes.bot, method).toContain(scope);
    }
  });

  it("subscribes to every event the code listens to, with the scope it needs", () => {
    expect(events).toContain("reaction_added");
    for (const event of events) expect(manifest.settings.event_subscriptions.bot_events).toContain(event);
    expect(manifest.oauth_config.scopes.bot).toContain("reactions:read");
  });

  it("asks for no scope the code does not use: each is a method's, an event's, /llm's or a twin's", () => {
    const used = new Set<string>(["commands"]);
    for (const method of methods) if (SCOPE_OF[method]) used.add(SCOPE_OF[method]);
    for (const event of events) if (EVENT_SCOPE[event]) used.add(EVENT_SCOPE[event]);
    for (const [twin, of] of Object.entries(TWIN_OF)) if (used.has(of)) used.add(twin);
    expect(manifest.oauth_config.scopes.bot.filter((scope) => !used.has(scope))).toEqual([]);
  });

  it("declares the slash command, and interactivity for the buttons the code handles", () => {
    expect(manifest.features.slash_commands.map((c) => c.command)).toEqual(["/llm"]);
    expect(code).toMatch(/app\.action/);
    expect(manifest.settings.interactivity.is_enabled).toBe(true);
    expect(manifest.oauth_config.scopes.bot).toContain("commands");
  });
});
