/** The Slack emulator of the test bench: see README.md beside this file. */
export { DEFAULT_POST_MESSAGE_PER_CHANNEL, DEFAULT_TIERS, METHOD_TIERS } from "./rate-limiter.ts";
export {
  formatMrkdwn,
  type RenderOptions,
  renderAllConversations,
  renderBlocks,
  renderConversation,
} from "./render-conversation.ts";
export { signSlackRequest } from "./sign-slack-request.ts";
export {
  type CommandOptions,
  type EventOptions,
  SlackEmulator,
  startSlackEmulator,
  type Transport,
  type WaitForOptions,
} from "./slack-emulator.ts";
export { newAppToken } from "./socket-mode.ts";
export type * from "./types.ts";
export { MESSAGE_TEXT_LIMIT, validateBlocks, validateMessage } from "./validate-blocks.ts";
export { SUPPORTED_METHODS } from "./web-api.ts";
