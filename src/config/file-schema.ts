import { z } from "zod";
import {
  compatibilityRowSchema,
  flagValueSchema,
  recipeSchema,
  settingNameSchema,
} from "../plan/catalogue-schema.ts";
import { profileSchema } from "../plan/profile-schema.ts";
import { problem } from "../problem-text.ts";
import { channelId, hubOrg, principals, refGlob } from "./config-grammar.ts";
import { groupsOfKnownHosts, groupsSchema } from "./groups-schema.ts";
import { hostSchema, uniqueHostNames } from "./host-schema.ts";
import { operatorsSchema } from "./operators-schema.ts";
import { overridesOfKnownRecipes } from "./recipe-overrides-check.ts";
import { retentionSchema } from "./retention-schema.ts";

const settingName = settingNameSchema;
const flagValue = flagValueSchema;

export const fileSchema = z
  .strictObject({
    slack: z.strictObject(
      { channel: channelId },
      problem("slack is not set", "give the channel id (C…), e.g. slack: { channel: C0123ABCD }"),
    ),
    requesters: principals.refine(
      (p) => p.users.length + p.groups.length > 0,
      problem(
        "nobody may request swaps",
        "list at least one user id or group id under requesters, e.g. requesters: { users: [U0123ABCD] }",
      ),
    ),
    approvers: principals.refine(
      (p) => p.users.length + p.groups.length > 0,
      problem(
        "nobody may approve swaps",
        "list at least one user id or group id under approvers, e.g. approvers: { users: [U0123ABCD] }",
      ),
    ),
    /** The people who may use the CLI and the HTTP API (src/config/operators-schema.ts). */
    operators: operatorsSchema,
    access: z
      .strictObject({
        /**
         * How old a user group's members may be when Slack cannot be asked for them again: past this,
         * nobody is admitted through the group (refused, saying it could not be checked) until Slack answers.
         */
        groupStalenessMinutes: z
          .number(problem("access.groupStalenessMinutes is not a number", "use minutes, e.g. 10"))
          .min(
            0,
            problem("access.groupStalenessMinutes is negative", "use 0 (never use old members) or more"),
          )
          .max(24 * 60, problem("access.groupStalenessMinutes is over a day", "use at most 1440 minutes"))
          .default(10),
      })
      .prefault({}),
    health: z
      .strictObject({
        /** Below 5 s only makes sense for tests (the monitor's end-to-end tests use 1 s). */
        intervalSeconds: z.number().min(0.5).max(3600).default(30),
        failureThreshold: z.number().int().min(1).max(100).default(3),
        checkTimeoutSeconds: z.number().positive().max(300).default(10),
        /** Consecutive passed checks that close an incident (default 2, see jobs/monitor/README.md). */
        recoveryThreshold: z.number().int().min(1).max(100).meta({ example: "2" }).optional(),
      })
      .prefault({}),
    approvals: z
      .strictObject({
        allowSelfApproval: z.boolean().default(false),
        ttlMinutes: z
          .number()
          .min(0.05)
          .max(7 * 24 * 60)
          .default(240),
      })
      .prefault({}),
    swaps: z
      .strictObject({
        pollSeconds: z.number().min(0.1).max(300).default(5),
        cardUpdateSeconds: z.number().min(0).max(600).default(15),
        downloadRetries: z.number().int().min(0).max(20).default(3),
        sanityTimeoutSeconds: z.number().positive().max(3600).default(120),
        benchmarkTimeoutSeconds: z.number().positive().max(7200).default(900),
        /**
         * How long a stage keeps retrying (with backoff) a host it cannot reach before it fails the
         * swap; a failure after the switch then rolls back, and the rollback retries as long again.
         */
        hostRetrySeconds: z
          .number()
          .min(1)
          .max(24 * 3600)
          .default(300),
        /**
         * BullMQ's lock on a running step (renewed every half of it while the process lives) and how
         * often workers look for steps whose process died: a killed worker's swap is taken over within
         * about lockSeconds + 2 × stalledCheckSeconds (BullMQ's stalled check needs two looks: the first
         * marks an active job, the next moves it if its lock is gone; bullmq moveStalledJobsToWait).
         */
        lockSeconds: z.number().min(1).max(600).default(30),
        stalledCheckSeconds: z.number().min(1).max(600).default(30),
        /**
         * On SIGTERM: how long running steps get to reach a safe point (waits hand over at once; a
         * command in flight finishes) before the process exits anyway. Keep it below the supervisor's
         * stop timeout (docker stop -t, systemd TimeoutStopSec).
         */
        shutdownGraceSeconds: z.number().min(0).max(600).default(20),
        /**
         * A host's first swap has no earlier numbers to compare with: measure the outgoing model before
         * the switch. `probe` (default): the single-stream run only (8 short prompts, one at a time: light
         * on production); `full`: the loaded run too (16 streams: it adds real load to production); `off`.
         */
        baseline: z.enum(["probe", "full", "off"]).default("probe"),
        /**
         * Blue/green: how long after the flip the old unit stays loaded (drained, taking no requests), so
         * that a rollback is a flip back (about a second) instead of a cold start. `/llm cancel` of the
         * swap flips back meanwhile; the host stays locked by the swap until the window ends.
         */
        flipBackSeconds: z.number().int().min(0).max(86_400).default(300),
        /**
         * Blue/green on GPUs the old unit uses too: the loaded benchmark would compete with production
         * for compute. `after-flip` (default): run it once production is on the new unit; `reduced`:
         * before the flip, at 4 streams instead of 16. On spare GPUs it always runs before the flip.
         */
        sharedBenchmark: z.enum(["after-flip", "reduced"]).default("after-flip"),
        /**
         * Blue/green on GPUs the old unit uses too: the new unit starts with the KV cache the old one
         * leaves room for. `true`: once the old unit has stopped, restart the new one at its full memory,
         * behind the front door's hold (a cold restart: new requests wait for its load, none fails);
         * `false` (default): it keeps the smaller KV cache until its next restart.
         */
        restartAtFullMemory: z.boolean().default(false),
        /**
         * Parking as a fast rollback. `true`: units are started parkable (SGLang: the memory saver with a
         * CPU backup; vLLM: `--enable-sleep-mode` and `VLLM_SERVER_DEV_MODE=1`; their admin endpoints
         * listen on the loopback port: the front door must not forward them, docs/front-door.md), and a
         * cold swap from such a unit, behind a front door with a standby slot, parks it (weights to host
         * RAM) instead of stopping it: a new model that fails its checks is stopped and the old one
         * brought back in seconds and checked again; once the new one is released, the old one stops.
         * `false` (default): off.
         */
        sleepMode: z.boolean().default(false),
        /** A new revision of the served model loads into the running engine where it fits (in-place-plan.ts). */
        inPlace: z.boolean().default(true),
        /**
         * The settings a requester may give a swap from Slack (`/llm swap … --set context-length=32768`), by
         * name; anything else is refused with this list. Default: none.
         */
        settable: z.array(settingName).default([]),
        /** Overrides the health wait the plan derives from the model's size. */
        healthTimeoutSeconds: z
          .number()
          .positive()
          .max(24 * 3600)
          .meta({ example: "1800" })
          .optional(),
      })
      .prefault({}),
    records: z
      .strictObject({
        /** How long a finished swap's record, events and Slack state are kept (the ledger shows them). */
        finishedDays: z.number().min(1).max(3650).default(365),
        /** How long a dry run's are kept. */
        dryRunHours: z
          .number()
          .min(0.01)
          .max(24 * 365)
          .default(24),
      })
      .prefault({}),
    audit: z
      .strictObject({
        /** Events kept in the audit stream (XADD MAXLEN ~): only older events beyond this many are trimmed. */
        maxEntries: z.number().int().min(1000).max(1_000_000_000).default(1_000_000),
      })
      .prefault({}),
    recipes: z
      .strictObject({
        /**
         * Changes to a known recipe's settings, for a host where one of its flags misbehaves (say, a
         * kernel backend that answers NaN on a newer engine): `set` a setting's value (true for a flag
         * without one), `remove` a setting; each change is shown in the plan with `reason`.
         */
        overrides: z
          .array(
            z.strictObject({
              recipe: z
                .string()
                .regex(
                  /^[a-z0-9][a-z0-9.+-]{0,60}$/,
                  problem(
                    "recipes.overrides[].recipe is not a recipe id",
                    "use an id `modelswap recipes` lists (a plan names the ones it applied), e.g. nvfp4-sm120-sglang",
                  ),
                ),
              set: z.record(settingName, z.union([z.literal(true), flagValue])).default({}),
              remove: z.array(settingName).default([]),
              reason: z
                .string(
                  problem(
                    "recipes.overrides[].reason is not set",
                    "say why, e.g. reason: NaN with cudnn on 0.5.7",
                  ),
                )
                .min(3)
                .max(300),
            }),
          )
          .default([]),
        /**
         * The operator's own recipes, in the catalogue's shape (src/plan/catalogue.yaml): applied after the
         * shipped ones, so a setting of theirs replaces a shipped recipe's.
         */
        own: z.array(recipeSchema).default([]),
        /**
         * The operator's own rows of the compatibility table (format, methods, engine, cc, how, source), read
         * before the shipped ones: a format modelswap cannot read (format unknown, named by its method), or a
         * GPU it does not list, that an engine does serve.
         */
        compatibility: z.array(compatibilityRowSchema).default([]),
      })
      .prefault({}),
    /** Per-model profiles: flags, tp, engine and engine ref for every swap to a model. */
    models: z.array(profileSchema).default([]),
    engine: z
      .strictObject({
        /**
         * Which refs of each host's engineUpstream `--engine-ref` may name: globs over branch and tag names
         * (`*` any run of characters). Default: every branch and tag, never a pull request.
         */
        allowedRefs: z
          .strictObject({ branches: z.array(refGlob).default(["*"]), tags: z.array(refGlob).default(["*"]) })
          .prefault({}),
        /**
         * A ref outside the list (a pull request, a commit no listed branch or tag points at): refused, or
         * fetched and built only after approval, the plan saying so in its first lines.
         */
        unlistedRefs: z.enum(["refuse", "build-after-approval"]).default("refuse"),
      })
      .prefault({}),
    status: z
      .strictObject({
        /**
         * Who sees the answer to `/llm status`: `private`, only the person who asked (an ephemeral message;
         * `--share` posts it in the channel), or `channel`, posted in the channel for everyone.
         */
        visibility: z
          .enum(
            ["private", "channel"],
            problem(
              "status.visibility is not private or channel",
              "use private (only who asked sees the answer; --share posts it) or channel (always posted)",
            ),
          )
          .default("private"),
      })
      .prefault({}),
    hub: z
      .strictObject({
        /** Hub pull-request revisions (`org/name@refs/pr/N`): anyone can open one on any public repo. */
        allowPullRequests: z.boolean().default(false),
        /**
         * Orgs whose models may run their own Python (--trust-remote-code): what runs is read from the
         * repo's files (every config's auto_map, src/plan/remote-code.ts), and code an auto_map takes
         * from another repo needs that repo's org here too. Default: none; a model that needs it is
         * refused, naming the files and the orgs.
         */
        remoteCodeOrgs: z.array(hubOrg).default([]),
      })
      .prefault({}),
    retention: retentionSchema,
    /** Host groups a rollout swaps together (`/llm swap <model> --group <name>`): src/config/groups-schema.ts. */
    groups: groupsSchema,
    /** Only for `npm run demo` and the test bench; never set in production (benchWarnings says so). */
    bench: z
      .strictObject({
        /**
         * The bench's simulated Hub serves weight files at 1/weightScale of their real size (their bytes
         * really download and verify); the plan multiplies their sizes by it, so its VRAM, tp, disk and
         * downtime figures are the real model's, and it says so in one line. Default 1: sizes as the Hub
         * lists them.
         */
        weightScale: z.number().int().min(1).max(1e9).default(1),
        /**
         * The simulated Slack allows N times Slack's documented rate limits (the bench's emulator
         * scaled so), and the bot paces its calls to match: one post a second per channel becomes N.
         * Default 1: Slack's own limits, which a real workspace enforces.
         */
        slackRateScale: z.number().min(1).max(1000).default(1),
      })
      .prefault({}),
    hosts: z
      .array(
        hostSchema,
        problem(
          "hosts is not set",
          "list at least one host under hosts:, each a mapping like those in modelswap.example.yaml",
        ),
      )
      .min(
        1,
        problem(
          "no hosts are configured",
          "list at least one host under hosts:, each a mapping like those in modelswap.example.yaml",
        ),
      ),
  })
  // Runs even when other settings are malformed (see hostSchema), so it reads the hosts defensively.
  .superRefine(
    (file, ctx) => {
      overridesOfKnownRecipes(file, ctx);
      const seen = uniqueHostNames(file, ctx);
      groupsOfKnownHosts(file, seen, ctx);
    },
    { when: () => true },
  );

export type FileConfig = z.infer<typeof fileSchema>;

/** What `config check` and the bot's start say of each bench setting that is set: none in production. */
export function benchWarnings(bench: FileConfig["bench"]): string[] {
  const warnings: string[] = [];
  if (bench.weightScale !== 1)
    warnings.push(
      `bench.weightScale is ${bench.weightScale}: plans multiply the weight files' sizes by ${bench.weightScale}, as the demo and the test bench need; in production leave it out (1)`,
    );
  if (bench.slackRateScale !== 1)
    warnings.push(
      `bench.slackRateScale is ${bench.slackRateScale}: the bot calls Slack ${bench.slackRateScale} times as often as Slack's rate limits allow, as the test bench's emulator does; in production leave it out (1), or Slack answers 429`,
    );
  return warnings;
}
export type HostConfig = FileConfig["hosts"][number];
export type Principals = FileConfig["requesters"];
