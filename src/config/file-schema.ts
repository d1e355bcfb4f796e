import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { FRONT_DOOR_NAME, FRONT_DOOR_NAME_RULE, isSocketPath } from "../grammar/front-door-name.ts";
import { HOST_NAME } from "../grammar/host-name.ts";
import { isRepoPart, REPO_PART_RULES } from "../grammar/model-ref.ts";
import { CHANNEL_ID, GROUP_ID, USER_ID } from "../grammar/slack-ids.ts";
import { UNIT_NAME } from "../grammar/unit-name.ts";
import { HOST_KEY_TYPES } from "../host/host-key.ts";
import { problem } from "./fix.ts";

/** Slack ids are uppercase letters and digits; users start with U or W, groups with S, channels with C or G. */
const userId = z
  .string()
  .regex(
    USER_ID,
    problem(
      "not a Slack user id",
      "use the member id (U…), e.g. U0123ABCD, from the user's profile → ⋯ → Copy member ID",
    ),
  );
const groupId = z
  .string()
  .regex(
    GROUP_ID,
    problem("not a Slack user group id", "use the group id (S…), e.g. S0123ABCD, not its @handle"),
  );
const channelId = z
  .string(
    problem("the Slack channel is not set", "set slack.channel to the channel id, e.g. channel: C0123ABCD"),
  )
  .regex(
    CHANNEL_ID,
    problem(
      "not a Slack channel id",
      "use the channel id (C…), e.g. C0123ABCD, shown at the bottom of the channel's details, not its #name",
    ),
  );

/** Paths reach the host's shell (always quoted); admitting only plain characters keeps them boring. */
const absolutePath = (what: string) =>
  z
    .string(problem(`${what} is not set`, `set it to an absolute path, e.g. /srv/models`))
    .regex(
      /^\/[A-Za-z0-9._/@+-]*$/,
      problem(
        `${what} must be an absolute path of letters, digits and ._/@+-`,
        "use a path like /srv/models",
      ),
    )
    .refine(
      (p) => !p.split("/").includes(".."),
      problem(`${what} must not contain ..`, "write the path out in full, e.g. /srv/models"),
    );

/** Unit names reach systemctl as arguments: one starting with `-` or `.` would read as an option or a hidden file. */
const unitName = z
  .string()
  .regex(
    UNIT_NAME,
    problem(
      "not a systemd service name",
      "use the unit's full name, e.g. sglang-qwen.service (letters, digits and @._:-, starting with a letter or digit)",
    ),
  );

const principals = z
  .strictObject({
    users: z.array(userId).default([]),
    groups: z.array(groupId).default([]),
  })
  .meta({ example: "{ users: [U0123ABCD], groups: [S0123ABCD] }" });

const sshSchema = z.strictObject({
  address: z
    .string(problem("ssh.address is not set", "set it to the host's DNS name or IP address"))
    .regex(
      /^[A-Za-z0-9.:-]{1,253}$/,
      problem("ssh.address is not a host name or IP address", "use e.g. gpu-1.internal or 10.0.0.5"),
    ),
  port: z.number().int().min(1).max(65535).default(22),
  user: z
    .string(problem("ssh.user is not set", "set the login user, e.g. modelswap"))
    .regex(/^[a-z_][a-z0-9_-]{0,31}$/, problem("ssh.user is not a Unix user name", "use e.g. modelswap")),
  privateKeyPath: z
    .string(
      problem(
        "ssh.privateKeyPath is not set",
        "point it at the bot's private key file (ed25519 recommended), e.g. /etc/modelswap/id_ed25519",
      ),
    )
    .regex(/^\//, problem("ssh.privateKeyPath must be absolute", "use e.g. /etc/modelswap/id_ed25519")),
  hostKeySha256: z
    .string(
      problem(
        "ssh.hostKeySha256 is not set: host keys are always pinned",
        "run: ssh-keyscan -t ed25519 -p PORT HOST | ssh-keygen -lf -   and copy the SHA256:… value",
      ),
    )
    .regex(
      /^SHA256:[A-Za-z0-9+/]{43}$/,
      problem(
        "ssh.hostKeySha256 is not a SHA256 fingerprint",
        "run: ssh-keyscan -t ed25519 -p PORT HOST | ssh-keygen -lf -   and copy the SHA256:… value (43 characters after the colon)",
      ),
    ),
  hostKeyType: z
    .enum(HOST_KEY_TYPES)
    .optional()
    .describe(
      "the type of the pinned key, as ssh-keygen -lf prints it in parentheses (ED25519, ECDSA, RSA), in lower case; when set, only that type's key is asked for; when not, the host's ed25519, then ecdsa, then rsa key is tried until one matches the pin",
    ),
  connectTimeoutSeconds: z.number().positive().max(300).default(10),
  keepaliveSeconds: z.number().positive().max(600).default(15),
  maxSessions: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe("concurrent channels on one connection; sshd's MaxSessions defaults to 10"),
});

const refGlob = z
  .string()
  .regex(
    /^[A-Za-z0-9._/*?-]{1,128}$/,
    problem("engine.allowedRefs entries are branch or tag name globs", "use e.g. main, release/*, v*"),
  );

/** An engine setting by its recipe name (the flag without dashes): "fp4-gemm-backend". */
const settingName = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{1,60}$/,
    problem("a recipe setting is named like its flag without the dashes", "use e.g. fp4-gemm-backend"),
  )
  .refine(
    (s) => !["model-path", "served-model-name", "host", "port", "tp-size"].includes(s),
    problem(
      "model-path, served-model-name, host, port and tp-size are the plan's own, not a recipe's",
      "use --tp on /llm swap for tp; the others follow the host's config",
    ),
  );

/** A flag's value as the unit passes it: one word, no shell or systemd specials. */
const flagValue = z
  .string()
  .regex(
    /^[A-Za-z0-9_.,:=+/-]{1,100}$/,
    problem("a recipe value is one plain word", "use e.g. flashinfer_cutlass"),
  );

const hubOrg = z
  .string()
  .refine(
    isRepoPart,
    problem(
      `hub.remoteCodeOrgs entries are Hub org or user names (${REPO_PART_RULES})`,
      "use e.g. moonshotai",
    ),
  );

const frontDoorName = (what: string) =>
  z
    .string(
      problem(
        `frontDoor.${what} is not set`,
        `name it as HAProxy's configuration does, e.g. ${what === "backend" ? "sglang" : what === "hold" ? "hold" : what === "standby.server" ? "green" : "blue"}`,
      ),
    )
    .regex(
      FRONT_DOOR_NAME,
      problem(`frontDoor.${what} is not a HAProxy name`, `use ${FRONT_DOOR_NAME_RULE}`),
    );

/**
 * A host's front door (docs/front-door.md): HAProxy in front of the units, steered over its Runtime API.
 * A cold swap drains `server` (the slot at servingPort) while `hold` (a slot at a port nothing listens
 * on) holds new requests, and sends them on once the new unit is healthy and sane.
 */
const frontDoorSchema = z.strictObject({
  /** The `stats socket` of HAProxy's global section, at `level admin`. */
  socket: z
    .string(
      problem("frontDoor.socket is not set", "use the stats socket's path, e.g. /run/haproxy/admin.sock"),
    )
    .refine(
      isSocketPath,
      problem(
        "frontDoor.socket must be an absolute path of letters, digits and _ . - (socat reads , : ! and spaces as syntax)",
        "use e.g. /run/haproxy/admin.sock",
      ),
    ),
  backend: frontDoorName("backend"),
  /** The slot whose address is the units' servingPort. */
  server: frontDoorName("server"),
  /** The unchecked slot at a closed port that holds requests while no unit can take them. */
  hold: frontDoorName("hold"),
  /**
   * The second unit slot, for blue/green swaps: its name in haproxy.cfg and the port a unit behind it
   * listens on. A swap whose new model fits beside the old one (spare GPUs, or room on the same ones)
   * starts it behind the slot that does not serve now, checks it there, and flips. Absent: every swap
   * is cold.
   */
  standby: z
    .strictObject({
      server: frontDoorName("standby.server"),
      port: z.number().int().min(1).max(65535),
    })
    .optional(),
  /** Run socat through `sudo -n` (when the socket's group does not let the bot's user in). */
  sudo: z.boolean().default(false),
  /**
   * How long HAProxy holds a request (`retries` × 1 s with `timeout connect 1s`): the plan says when the
   * expected load is longer. modelswap cannot read it from HAProxy; keep it equal to haproxy.cfg's.
   */
  holdSeconds: z.number().int().min(1).max(3600).default(300),
});
export type FrontDoorConfig = z.infer<typeof frontDoorSchema>;

function gitUrl(what: string, example: string) {
  return z
    .string()
    .regex(
      /^(https:\/\/|file:\/\/|\/|git@)[A-Za-z0-9._/:@~+-]+$/,
      problem(`${what} is not a git URL`, `use e.g. ${example}`),
    );
}

/** One more engine of a host (hosts[].engines.<kind>). */
const hostEngineSchema = z.strictObject({
  /** Its Python venv (the CUDA torch stack it needs; modelswap never installs into it). */
  venv: absolutePath("engines venv"),
  /** Where its source is fetched from; default: its upstream on GitHub. */
  upstream: gitUrl("engines upstream", "https://github.com/vllm-project/vllm.git").optional(),
  patches: z.array(absolutePath("engines patches entry")).default([]),
  /**
   * vLLM: compile its CUDA kernels on the host (CUDA toolkit, an hour or more) instead of taking the
   * precompiled ones of the commit (VLLM_USE_PRECOMPILED=1). SGLang builds compile nothing.
   */
  compileKernels: z.boolean().default(false),
});

const hostSchema = z
  .strictObject({
    name: z
      .string(problem("host name is not set", "give every host a short name, e.g. gpu-1"))
      .regex(
        HOST_NAME,
        problem("host name must be lowercase letters, digits and -", "use e.g. gpu-1 (it is typed in Slack)"),
      ),
    ssh: sshSchema.optional(),
    local: z.literal(true).optional(),
    modelsDir: absolutePath("modelsDir"),
    /**
     * Unused since each swap builds its engine in a directory of its own (under modelsDir): the source
     * the serving unit runs is never touched. Accepted so that older configs still load.
     */
    engineSourceDir: absolutePath("engineSourceDir").optional(),
    venv: absolutePath("venv"),
    /**
     * The engine a swap on this host uses unless it names another (`--engine`): `sglang` or `vllm`.
     * `venv`, `engineUpstream` and `enginePatches` are this engine's; `engines` adds others.
     */
    engine: z
      .enum(
        ENGINE_KINDS,
        problem(
          `must be one of ${ENGINE_KINDS.join(", ")}`,
          "use engine: sglang or engine: vllm, or leave it out",
        ),
      )
      .default("sglang"),
    /** Where `engine`'s source is fetched from; default: its upstream on GitHub. */
    engineUpstream: gitUrl("engineUpstream", "https://github.com/sgl-project/sglang.git").optional(),
    /**
     * Further engines this host has, each with its own venv (vLLM and SGLang pin different torch
     * builds): a swap picks one with `--engine <kind>`.
     */
    engines: z
      .strictObject({ sglang: hostEngineSchema.optional(), vllm: hostEngineSchema.optional() })
      .optional(),
    unitDir: absolutePath("unitDir").default("/etc/systemd/system"),
    currentUnit: unitName,
    servingPort: z.number().int().min(1).max(65535).default(30000),
    commandTimeoutSeconds: z.number().positive().max(3600).default(30),
    extraPath: z.array(absolutePath("extraPath entry")).default([]),
    enginePatches: z.array(absolutePath("enginePatches entry")).default([]),
    sudo: z.boolean().default(false),
    /**
     * The longest wait for the old unit's requests in flight to end before it is stopped anyway (the
     * front door's drain; without one, SGLang's own drain on SIGTERM, bounded by the unit's
     * TimeoutStopSec, which modelswap writes as this plus 30 s).
     */
    drainSeconds: z.number().int().min(0).max(3600).default(120),
    frontDoor: frontDoorSchema.optional(),
  })
  // Looks only at which keys are there, so it runs even when another setting of the host is malformed:
  // every problem is reported in one `config check`, not one round at a time.
  .superRefine(
    (host, ctx) => {
      if (host === null || typeof host !== "object") return;
      if ((host.ssh === undefined) === (host.local === undefined)) {
        ctx.addIssue({
          code: "custom",
          path: ["ssh"],
          message: problem(
            `host ${host.name} needs exactly one of ssh or local`,
            "add an ssh: block for a remote host (e.g. ssh: { address: gpu-1.internal, user: modelswap, privateKeyPath: …, hostKeySha256: … }), or local: true when the bot runs on the GPU host itself",
          ),
        });
      }
      const fd = host.frontDoor as Partial<FrontDoorConfig> | undefined;
      const standby = fd?.standby;
      if (fd === undefined || standby === undefined || typeof standby !== "object") return;
      if (standby.port === (host.servingPort ?? 30000))
        ctx.addIssue({
          code: "custom",
          path: ["frontDoor", "standby", "port"],
          message: problem(
            `frontDoor.standby.port is the host's servingPort (${standby.port}): the two unit slots need ports of their own`,
            "give the standby slot another port, e.g. servingPort + 1, as its line in haproxy.cfg does",
          ),
        });
      if (standby.server === fd.server || standby.server === fd.hold)
        ctx.addIssue({
          code: "custom",
          path: ["frontDoor", "standby", "server"],
          message: problem(
            `frontDoor.standby.server is ${standby.server}, the name of another of the front door's slots`,
            "name the second unit slot as haproxy.cfg does, e.g. green",
          ),
        });
    },
    { when: () => true },
  );

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
         * vLLM's sleep mode as a fast rollback. `true`: vLLM units are started with
         * `--enable-sleep-mode` and `VLLM_SERVER_DEV_MODE=1` (which also opens vLLM's development
         * endpoints on its loopback port: the front door must not forward them, docs/front-door.md),
         * and a cold swap from such a unit, behind a front door with a standby slot, parks it (weights to
         * host RAM) instead of stopping it: a new model that fails its checks is stopped and the old one
         * woken in seconds; once the new one is released, the old one stops. `false` (default): off.
         */
        sleepMode: z.boolean().default(false),
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
                  /^[a-z0-9.+-]{1,40}\/[a-z0-9]{1,10}\/sm_[0-9]{2,3}$/,
                  problem(
                    "recipes.overrides[].recipe is not a recipe id",
                    "use the id a plan shows, e.g. qwen3.5-moe/nvfp4/sm_120",
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
      })
      .prefault({}),
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
         * Orgs whose models may run their own Python (config.json auto_map → --trust-remote-code). Default:
         * none; a model that needs it is refused, naming its org.
         */
        remoteCodeOrgs: z.array(hubOrg).default([]),
      })
      .prefault({}),
    /**
     * Only for `npm run demo` and the test bench; never set it in production. The bench's simulated Hub
     * serves weight files at 1/weightScale of their real size (their bytes really download and verify);
     * the plan multiplies their sizes by it, so its VRAM, tp, disk and downtime figures are the real
     * model's, and it says so in one line. Default 1: sizes as the Hub lists them.
     */
    bench: z
      .strictObject({
        weightScale: z.number().int().min(1).max(1e9).default(1),
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
      const hosts: unknown = file !== null && typeof file === "object" ? file.hosts : undefined;
      if (!Array.isArray(hosts)) return;
      const seen = new Set<string>();
      hosts.forEach((host: unknown, index) => {
        const name: unknown =
          host !== null && typeof host === "object" ? (host as { name?: unknown }).name : undefined;
        if (typeof name !== "string") return;
        if (seen.has(name)) {
          ctx.addIssue({
            code: "custom",
            path: ["hosts", index, "name"],
            message: problem(
              `host name ${name} is used twice`,
              "give every host a different name, e.g. gpu-2",
            ),
          });
        }
        seen.add(name);
      });
    },
    { when: () => true },
  );

export type FileConfig = z.infer<typeof fileSchema>;

/** What `config check` and the bot's start say when bench.weightScale is set. */
export function benchScaleWarning(scale: number): string {
  return `bench.weightScale is ${scale}: plans multiply the weight files' sizes by ${scale}, as the demo and the test bench need; in production leave it out (1)`;
}
export type HostConfig = FileConfig["hosts"][number];
export type SshConfig = NonNullable<HostConfig["ssh"]>;
export type Principals = FileConfig["requesters"];
