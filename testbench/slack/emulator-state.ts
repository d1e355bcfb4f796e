import { manifestBotScopes } from "../../src/slack/manifest-scopes.ts";
import { ApiFaults } from "./fault-switches.ts";
import { RateLimiter } from "./rate-limiter.ts";
import type { SocketModeLink } from "./socket-mode.ts";
import type { ResponseUrlPost, SlackEmulatorOptions } from "./types.ts";
import type { ApiContext } from "./web-api.ts";
import { SlackWorkspace } from "./workspace.ts";

/**
 * What the parts of the emulator share (slack-emulator.ts wires them): the workspace, the Web API's
 * context, rate limits and fault switches, the response_url posts, and the Socket Mode link once the
 * emulator speaks Socket Mode.
 */
export interface EmulatorState {
  readonly opts: SlackEmulatorOptions;
  /** Base URL of the emulator, e.g. http://127.0.0.1:<port>. */
  readonly url: string;
  readonly workspace: SlackWorkspace;
  readonly limiter: RateLimiter;
  readonly faults: ApiFaults;
  readonly ctx: ApiContext;
  readonly responsePosts: ResponseUrlPost[];
  /** Slack's deadline for the bot's answer to a delivery (3 s; SlackEmulator.setAckDeadline changes it). */
  ackDeadlineMs: number;
  /** How many calls were answered 429. */
  rateLimited: number;
  socketLink: SocketModeLink | undefined;
}

export function createEmulatorState(opts: SlackEmulatorOptions, url: string): EmulatorState {
  const workspace = new SlackWorkspace(opts);
  const limiter = new RateLimiter(opts.rateLimits);
  return {
    opts,
    url,
    workspace,
    limiter,
    faults: new ApiFaults(),
    ctx: {
      ws: workspace,
      limiter,
      baseUrl: url,
      validTokens: new Set([opts.botToken, ...(opts.extraTokens ?? [])]),
      appTokens: new Set(),
      grantedScopes: [...(opts.scopes ?? manifestBotScopes())],
    },
    responsePosts: [],
    ackDeadlineMs: opts.ackDeadlineMs ?? 3000,
    rateLimited: 0,
    socketLink: undefined,
  };
}
