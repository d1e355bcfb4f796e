import type { HostConfig } from "../config/file-schema.ts";
import { type RetentionConfig, retentionFor } from "../config/retention-schema.ts";
import type { ServingState } from "../swap/host-serving.ts";
import type { GcTarget } from "./collect-garbage.ts";

/**
 * What a gc of `host` works on and by which rules: its directories, its sudo, and its retention (the
 * host's over the top-level's) with the units that serve it now (the config's and the ledger's).
 */
export function gcTarget(
  host: Pick<HostConfig, "modelsDir" | "unitDir" | "sudo" | "currentUnit" | "retention">,
  retention: RetentionConfig,
  serving: Pick<ServingState, "unit"> | undefined,
): GcTarget {
  const rules = retentionFor(retention, host);
  return {
    modelsDir: host.modelsDir,
    unitDir: host.unitDir,
    sudo: host.sudo,
    rules: { ...rules, serving: [host.currentUnit, ...(serving === undefined ? [] : [serving.unit])] },
  };
}
