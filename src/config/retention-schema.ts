import { z } from "zod";
import { problem } from "../problem-text.ts";

/*
 * Disk retention (src/retention/): what `/llm gc` and the end of every swap keep on a host (the rules are
 * src/retention/retention-plan.ts's): what serves, the last `keep` units that served and what they name,
 * anything pinned.
 */

/** A pinned entry: an absolute path under the host's modelsDir or unitDir, or the plain name of one entry. */
const pinned = z
  .string()
  .regex(
    /^(\/[A-Za-z0-9._/@+-]*|[A-Za-z0-9._@+-]+)$/,
    problem(
      "a retention.pinned entry must be an absolute path or one directory or unit name, of letters, digits and ._/@+-",
      "name a model directory (/srv/models/org--name--0123456789ab, or just org--name--0123456789ab), an engine build, or a unit file",
    ),
  )
  .refine(
    (p) => !p.split("/").includes("..") && p !== "." && p !== "..",
    problem("a retention.pinned entry contains ..", "write the path without .. segments"),
  );

const keep = z
  .number(problem("retention.keep is not a number", "use a whole number of models, e.g. 2"))
  .int(problem("retention.keep is not a whole number", "use e.g. 2"))
  .min(
    1,
    problem(
      "retention.keep is below 1",
      "use at least 1 (what serves); 2 keeps the model a rollback goes back to",
    ),
  )
  .max(100, problem("retention.keep is over 100", "use at most 100"));

/** The config's top-level `retention:`, every host's default. */
export const retentionSchema = z
  .strictObject({
    /**
     * How many of the units that served last a host keeps (modelswap's, and the config's currentUnit; newest
     * unit file first), with the model directory and engine build each names: 2 is what serves and what
     * `/llm rollback` goes back to.
     */
    keep: keep.default(2),
    /** Entries no host ever deletes. */
    pinned: z.array(pinned).default([]),
    /** After each swap that ended with a host serving (succeeded or rolled back), delete what retention lets go. */
    afterSwap: z.boolean().default(true),
  })
  .prefault({});

/** `hosts[].retention`: the host's own, over the top-level one (its pinned entries are added to the top-level's). */
export const hostRetentionSchema = z.strictObject({
  keep: keep.optional(),
  pinned: z.array(pinned).default([]),
});

export type RetentionConfig = z.infer<typeof retentionSchema>;
export type HostRetentionConfig = z.infer<typeof hostRetentionSchema>;

/** The rules for one host: its keep (or the default) and every pinned entry (the default's and its own). */
export function retentionFor(
  global: RetentionConfig,
  host: { retention?: HostRetentionConfig | undefined },
): { keep: number; pinned: string[] } {
  return {
    keep: host.retention?.keep ?? global.keep,
    pinned: [...global.pinned, ...(host.retention?.pinned ?? [])],
  };
}
