import { describe, expect, it } from "vitest";
import { type FileConfig, fileSchema } from "../../src/config/file-schema.ts";
import { changesAnything, describeChanges, planReload } from "../../src/reload/config-changes.ts";

/**
 * What a reload changes, by name (src/reload/config-changes.ts): what the log and the audit stream say,
 * and which settings keep their running value until a restart.
 */
const KEY = "/etc/modelswap/secret-place/id_ed25519";
const PIN = `SHA256:${"a".repeat(43)}`;

// biome-ignore lint/suspicious/noExplicitAny: each test edits the raw YAML as a person would
function config(change: (raw: any) => void = () => undefined): FileConfig {
  const raw = {
    slack: { channel: "C0SWAPS01" },
    requesters: { users: ["U0ALICE01"], groups: ["S0MLOPS01"] },
    approvers: { users: ["U0BOB0001"] },
    health: { intervalSeconds: 30 },
    hosts: [
      {
        name: "gpu-1",
        ssh: { address: "10.0.0.5", user: "modelswap", privateKeyPath: KEY, hostKeySha256: PIN },
        modelsDir: "/srv/models",
        venv: "/opt/sglang/.venv",
        currentUnit: "sglang-qwen.service",
      },
      {
        name: "box",
        local: true,
        modelsDir: "/srv/models",
        venv: "/opt/sglang/.venv",
        currentUnit: "sglang-kimi.service",
      },
    ],
  };
  change(raw);
  return fileSchema.parse(raw);
}

describe("planReload", () => {
  it("a file read again unchanged changes nothing", () => {
    const { changes, file } = planReload(config(), config());
    expect(changesAnything(changes)).toBe(false);
    expect(changes.needsRestart).toEqual([]);
    expect(file).toEqual(config());
    expect(describeChanges(changes)).toBe("nothing changed");
  });

  it("names the hosts added, removed and changed, with the settings that changed", () => {
    const next = config((raw) => {
      raw.hosts[0].ssh.port = 2222;
      raw.hosts[0].unitDir = "/etc/systemd/other";
      raw.hosts[0].frontDoor = {
        socket: "/run/haproxy/admin.sock",
        backend: "sglang",
        server: "blue",
        hold: "hold",
      };
      raw.hosts.splice(1, 1, {
        name: "gpu-2",
        local: true,
        modelsDir: "/srv/models",
        venv: "/opt/sglang/.venv",
        currentUnit: "sglang-new.service",
      });
    });
    const { changes } = planReload(config(), next);
    expect(changes.hosts).toEqual({
      added: ["gpu-2"],
      removed: ["box"],
      changed: [{ name: "gpu-1", settings: ["ssh.port", "unitDir", "frontDoor"] }],
    });
    expect(describeChanges(changes)).toBe(
      "hosts added: gpu-2; hosts removed: box; hosts changed: gpu-1 (ssh.port, unitDir, frontDoor)",
    );
  });

  it("names who became or stopped being an approver or a requester, users and groups alike", () => {
    const next = config((raw) => {
      raw.approvers = { users: ["U0BOB0001", "U0ERIN001"], groups: ["S0APPROVE"] };
      raw.requesters = { users: ["U0ALICE01"] };
    });
    const { changes } = planReload(config(), next);
    expect(changes.approvers).toEqual({ added: ["U0ERIN001", "S0APPROVE"], removed: [] });
    expect(changes.requesters).toEqual({ added: [], removed: ["S0MLOPS01"] });
    expect(describeChanges(changes)).toBe(
      "approvers added: U0ERIN001, S0APPROVE; requesters removed: S0MLOPS01",
    );
  });

  it("names other settings by their path, a list as one setting", () => {
    const next = config((raw) => {
      raw.health = { intervalSeconds: 5, failureThreshold: 2 };
      raw.swaps = { flipBackSeconds: 60 };
      raw.recipes = {
        overrides: [{ recipe: "qwen3.5", remove: ["tool-call-parser"], reason: "test it" }],
      };
    });
    const { changes } = planReload(config(), next);
    expect(changes.settings).toEqual([
      "health.intervalSeconds",
      "health.failureThreshold",
      "swaps.flipBackSeconds",
      "recipes.overrides",
    ]);
  });

  it("keeps the restart-only settings' running values, says so, and applies the rest", () => {
    const running = config();
    const next = config((raw) => {
      raw.slack = { channel: "C0OTHER01" };
      raw.swaps = { lockSeconds: 60, pollSeconds: 2 };
      raw.audit = { maxEntries: 5000 };
    });
    const { changes, file } = planReload(running, next);
    expect(changes.needsRestart).toEqual(["slack.channel", "swaps.lockSeconds", "audit.maxEntries"]);
    expect(file.slack.channel).toBe("C0SWAPS01");
    expect(file.swaps.lockSeconds).toBe(running.swaps.lockSeconds);
    expect(file.audit.maxEntries).toBe(running.audit.maxEntries);
    expect(file.swaps.pollSeconds).toBe(2);
    expect(changes.settings).toEqual(["swaps.pollSeconds"]);
    expect(describeChanges(changes)).toBe(
      "settings changed: swaps.pollSeconds; needs a restart (the running value is kept): slack.channel, swaps.lockSeconds, audit.maxEntries",
    );
    // the file read is not changed by it
    expect(next.slack.channel).toBe("C0OTHER01");
  });

  it("never says a value: a moved key file is a setting name, not its path", () => {
    const next = config((raw) => {
      raw.hosts[0].ssh.privateKeyPath = "/etc/modelswap/another-secret-place/id_ed25519";
      raw.hosts[0].ssh.address = "10.9.9.9";
      raw.health = { intervalSeconds: 1234.5 };
    });
    const line = describeChanges(planReload(config(), next).changes);
    expect(line).toBe(
      "hosts changed: gpu-1 (ssh.address, ssh.privateKeyPath); settings changed: health.intervalSeconds",
    );
    for (const value of ["secret-place", "10.9.9.9", "1234.5"]) expect(line).not.toContain(value);
  });
});
