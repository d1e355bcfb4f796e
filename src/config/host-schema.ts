import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { ENGINE_REF_RULE, isEngineRef } from "../grammar/engine-ref.ts";
import { HOST_NAME } from "../grammar/host-name.ts";
import { sshSchema } from "../host/ssh-schema.ts";
import { configFlagSchema } from "../plan/profile-schema.ts";
import { problem } from "../problem-text.ts";
import { absolutePath, gitUrl, unitName } from "./config-grammar.ts";
import { type FrontDoorConfig, frontDoorSchema } from "./front-door-schema.ts";
import { hostRetentionSchema } from "./retention-schema.ts";

/** One more engine of a host (hosts[].engines.<kind>). */
export const hostEngineSchema = z.strictObject({
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

export const hostSchema = z
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
    /** Disk retention of this host (src/config/retention-schema.ts), over the top-level `retention`. */
    retention: hostRetentionSchema.optional(),
    /**
     * House flags: settings every unit on this host gets (after the recipes; a model's profile and the
     * swap's --set come after them), each for every engine unless `engines` says.
     */
    flags: z.array(configFlagSchema).default([]),
    /**
     * The engine ref a swap on this host builds unless the request or the model's profile names one: the
     * build the host trusts. A ref that resolves to the commit the serving unit runs reuses its build (no
     * rebuild). Default: main.
     */
    engineRef: z
      .string()
      .refine(isEngineRef, problem("hosts[].engineRef is not a git ref", `use ${ENGINE_REF_RULE}`))
      .optional(),
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

/**
 * Every host's name is given once (an issue at the second); the names seen. Read defensively: it runs
 * even when other settings are malformed.
 */
export function uniqueHostNames(file: unknown, ctx: z.RefinementCtx): Set<string> {
  const seen = new Set<string>();
  const hosts: unknown =
    file !== null && typeof file === "object" ? (file as { hosts?: unknown }).hosts : undefined;
  if (!Array.isArray(hosts)) return seen;
  hosts.forEach((host: unknown, index) => {
    const name: unknown =
      host !== null && typeof host === "object" ? (host as { name?: unknown }).name : undefined;
    if (typeof name !== "string") return;
    if (seen.has(name)) {
      ctx.addIssue({
        code: "custom",
        path: ["hosts", index, "name"],
        message: problem(`host name ${name} is used twice`, "give every host a different name, e.g. gpu-2"),
      });
    }
    seen.add(name);
  });
  return seen;
}
