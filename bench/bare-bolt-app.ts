import { App, HTTPReceiver, LogLevel } from "@slack/bolt";

/**
 * The ack benchmark's baseline: a bare Bolt app on the same HTTP receiver, signing secret and Web API as
 * the bot, whose `/llm` handler only acks. Whatever the bot takes beyond this is its own work.
 * Run as a child process: PORT, SLACK_SIGNING_SECRET, SLACK_BOT_TOKEN and SLACK_API_URL from the bench.
 */
const receiver = new HTTPReceiver({
  signingSecret: process.env.SLACK_SIGNING_SECRET ?? "",
  endpoints: "/slack/events",
});
const app = new App({
  token: process.env.SLACK_BOT_TOKEN,
  receiver,
  logLevel: LogLevel.ERROR,
  clientOptions: { slackApiUrl: process.env.SLACK_API_URL },
});
app.command("/llm", async ({ ack }) => {
  await ack({ response_type: "ephemeral", text: "ok" });
});
await app.start(Number(process.env.PORT));
process.once("SIGTERM", () => void app.stop().then(() => process.exit(0)));
