import { z } from "zod";
import { HOST_NAME } from "../grammar/host-name.ts";
import { expandHostSet, HOST_SET_RULE } from "../grammar/host-set.ts";
import { problem } from "../problem-text.ts";

/*
 * Host groups (`groups:`): hosts that serve the same model, swapped together by one rollout
 * (`/llm swap <model> --group <name>`, src/rollout/). Each group says its hosts and how a rollout moves
 * through them: a canary first, then waves, the gate between them, and how many hosts may be out of
 * service at once.
 */

const hostSet = z
  .union([z.string(), z.array(z.string())], problem("a group's hosts is not set", `use ${HOST_SET_RULE}`))
  .transform((value, ctx) => {
    const expanded = expandHostSet(Array.isArray(value) ? value.join(",") : value);
    if (expanded.ok) return expanded.hosts;
    ctx.addIssue({
      code: "custom",
      message: problem(`a group's hosts: ${expanded.reason}`, `use ${HOST_SET_RULE}`),
    });
    return z.NEVER;
  });

/** How a rollout moves through a group's hosts (every field has its default: a group may give none). */
export const wavePolicySchema = z.strictObject({
  /** Hosts in the first wave, the canary, whose numbers the later waves are measured against. */
  canary: z
    .number(problem("a group's canary is not a number", "use a number of hosts, e.g. 1"))
    .int(problem("a group's canary is not a whole number", "use e.g. 1"))
    .min(1, problem("a group's canary is below 1", "use at least 1: the first wave is the canary"))
    .max(64, problem("a group's canary is over 64", "use at most 64"))
    .default(1),
  /**
   * After the canary, the share of the group's hosts swapped once each wave has ended (percent, rising,
   * the last 100): `[25, 100]` is a wave to a quarter of the hosts, then the rest.
   */
  waves: z
    .array(
      z
        .number()
        .min(
          1,
          problem("a group's waves entry is below 1", "use percents of the group's hosts, e.g. [25, 100]"),
        )
        .max(100, problem("a group's waves entry is over 100", "use percents up to 100, e.g. [25, 100]")),
    )
    .min(1)
    .max(16)
    .refine(
      (w) => w.every((p, i) => i === 0 || p > w[i - 1]!) && w.at(-1) === 100,
      problem("a group's waves must rise and end at 100", "use e.g. [25, 100] or [10, 50, 100]"),
    )
    .default([25, 100]),
  /**
   * At most this many hosts switch at once (a cold swap takes a host out of service while it loads): a
   * wave larger than this goes in batches of it.
   */
  maxUnavailable: z
    .number(problem("a group's maxUnavailable is not a number", "use a number of hosts, e.g. 2"))
    .int(problem("a group's maxUnavailable is not a whole number", "use e.g. 2"))
    .min(1, problem("a group's maxUnavailable is below 1", "use at least 1"))
    .max(256)
    .default(4),
  /**
   * The gate between waves: each host's output tok/s (its single-stream benchmark) within this many
   * percent below the canary's, and no host failed. 100 turns the throughput part off.
   */
  throughputMargin: z
    .number(problem("a group's throughputMargin is not a number", "use a percent, e.g. 10"))
    .min(0)
    .max(100)
    .default(10),
  /**
   * Peer copies: the first host fetches the weights from the Hub, and the others copy them host to host
   * over SSH (rsync, each copy checked against the Hub's sha256), at most this many from one host at
   * once. 0 turns them off: every host fetches from the Hub.
   */
  copyFanout: z
    .number(problem("a group's copyFanout is not a number", "use a number of copies, e.g. 2"))
    .int(problem("a group's copyFanout is not a whole number", "use e.g. 2"))
    .min(0, problem("a group's copyFanout is below 0", "use 0 (every host from the Hub) or more"))
    .max(16, problem("a group's copyFanout is over 16", "use at most 16"))
    .default(2),
  /**
   * What the plan takes the link between two hosts to carry, in Gbit/s, to say how long the copies take
   * (one host serving `copyFanout` copies at once shares its link among them). Only the estimate.
   */
  copyGbps: z
    .number(problem("a group's copyGbps is not a number", "use the hosts' link speed in Gbit/s, e.g. 25"))
    .min(0.1, problem("a group's copyGbps is below 0.1", "use the hosts' link speed in Gbit/s, e.g. 25"))
    .max(3200, problem("a group's copyGbps is over 3200", "use the hosts' link speed in Gbit/s, e.g. 25"))
    .default(10),
});
export type WavePolicy = z.infer<typeof wavePolicySchema>;

export const groupSchema = wavePolicySchema.extend({ hosts: hostSet });
export type GroupConfig = z.infer<typeof groupSchema>;

/** The defaults of a rollout over hosts named by `--hosts` (no group: its policy is every default). */
export const DEFAULT_WAVE_POLICY: WavePolicy = wavePolicySchema.parse({});

export const groupsSchema = z
  .record(
    z
      .string()
      .regex(
        HOST_NAME,
        problem("a group name is not a plain name", "use lowercase letters, digits and -, e.g. prod-a"),
      ),
    groupSchema,
  )
  .default({});

/** Every host a group names is one of hosts: (read defensively: other settings may be malformed). */
export function groupsOfKnownHosts(file: unknown, hosts: ReadonlySet<string>, ctx: z.RefinementCtx): void {
  const groups =
    file !== null && typeof file === "object" ? (file as { groups?: unknown }).groups : undefined;
  if (groups === null || typeof groups !== "object") return;
  for (const [name, group] of Object.entries(groups)) {
    const members =
      group !== null && typeof group === "object" ? (group as { hosts?: unknown }).hosts : undefined;
    if (!Array.isArray(members)) continue;
    for (const host of members) {
      if (typeof host !== "string" || hosts.has(host)) continue;
      ctx.addIssue({
        code: "custom",
        path: ["groups", name, "hosts"],
        message: problem(
          `group ${name} names host ${host}, which is not under hosts:`,
          `add ${host} under hosts:, or take it out of the group (hosts: ${[...hosts].slice(0, 8).join(", ")})`,
        ),
      });
    }
  }
}
