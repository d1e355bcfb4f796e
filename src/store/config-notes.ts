import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.ts";
import { keys } from "./keys.ts";

/** What a process says once it has loaded its config file: which bytes (their sha256), and who it is. */
const configNoteSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  process: z.string().min(1).max(200),
});
export type ConfigNote = z.infer<typeof configNoteSchema>;

/**
 * The notes processes pass each other over Redis pub/sub (`{modelswap}:store:config-loaded`, a channel,
 * not a key) when they have loaded a config file: a process whose file watch missed a change hears that
 * another has a newer file and reads its own again. A note lost while Redis is away is no loss: each
 * process also watches its file, and takes SIGHUP.
 */
export class ConfigNotes {
  constructor(private readonly redis: RedisClient) {}

  async publish(note: ConfigNote): Promise<void> {
    await this.redis.publish(keys.configNotes, JSON.stringify(configNoteSchema.parse(note)));
  }

  /**
   * Listens for notes on `subscriber`, a connection of its own (a subscribed connection runs no other
   * command; ioredis subscribes again after a reconnect). A message that is not a note is ignored.
   */
  static async listen(subscriber: RedisClient, onNote: (note: ConfigNote) => void): Promise<void> {
    subscriber.on("message", (channel: string, message: string) => {
      if (channel !== keys.configNotes) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(message);
      } catch {
        return;
      }
      const note = configNoteSchema.safeParse(parsed);
      if (note.success) onNote(note.data);
    });
    await subscriber.subscribe(keys.configNotes);
  }
}
