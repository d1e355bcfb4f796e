import { afterEach, describe, expect, it } from "vitest";
import { fileSchema, type HostConfig } from "../../src/config/file-schema.ts";
import { type DeferredHost, HostRegistry } from "../../src/host/host-registry.ts";
import { createLogger } from "../../src/log.ts";

/**
 * The host registry under a reload (src/host/host-registry.ts): a host is added, changed or removed at
 * once, unless a swap holds it — then it keeps the settings its swap started with until that swap has
 * ended, so no step of a swap runs with other directories, ports or addresses than its first steps had.
 */
function host(name: string, extra: Record<string, unknown> = {}): HostConfig {
  const file = fileSchema.parse({
    slack: { channel: "C0SWAPS01" },
    requesters: { users: ["U0ALICE01"] },
    approvers: { users: ["U0BOB0001"] },
    hosts: [
      {
        name,
        local: true,
        modelsDir: "/srv/models",
        venv: "/opt/sglang/.venv",
        currentUnit: `sglang-${name}.service`,
        ...extra,
      },
    ],
  });
  return file.hosts[0]!;
}

/** Who holds which host (the store's host locks), as a test sets it. */
const locks = new Map<string, string>();
const holderOf = async (name: string) => locks.get(name);
const unreadable = async (): Promise<string | undefined> => {
  throw new Error("Redis is away");
};

let registry: HostRegistry<HostConfig>;
afterEach(async () => {
  locks.clear();
  await registry?.closeAll();
});

describe("HostRegistry.update", () => {
  it("adds, changes and removes hosts no swap holds at once, in the new file's order", async () => {
    registry = new HostRegistry([host("gpu-1"), host("gpu-2")], createLogger({ level: "silent" }));
    const before = registry.transport("gpu-1");
    const deferred = await registry.update([host("gpu-3"), host("gpu-1", { servingPort: 30005 })], holderOf);
    expect(deferred).toEqual([]);
    expect(registry.names()).toEqual(["gpu-3", "gpu-1"]);
    expect(registry.config("gpu-1").servingPort).toBe(30005);
    expect(registry.find("gpu-2")).toBeUndefined();
    expect(() => registry.config("gpu-2")).toThrow(/no host named gpu-2 is configured/);
    // the changed host's next command goes through a transport made with its new settings
    expect(registry.transport("gpu-1")).not.toBe(before);
  });

  it("a host a swap holds keeps its settings until that swap has ended", async () => {
    registry = new HostRegistry([host("gpu-1")], createLogger({ level: "silent" }));
    const settled: DeferredHost[][] = [];
    registry.onSettled((applied) => settled.push(applied));
    const transport = registry.transport("gpu-1");
    locks.set("gpu-1", "sw-one");
    const deferred = await registry.update([host("gpu-1", { unitDir: "/etc/systemd/elsewhere" })], holderOf);
    expect(deferred).toEqual([{ host: "gpu-1", swap: "sw-one" }]);
    expect(registry.config("gpu-1").unitDir).toBe("/etc/systemd/system");
    expect(registry.transport("gpu-1")).toBe(transport);
    expect(registry.waiting()).toEqual([{ host: "gpu-1", swap: "sw-one" }]);

    // the swap still runs: nothing moves
    expect(await registry.settle(holderOf)).toEqual([]);
    expect(registry.config("gpu-1").unitDir).toBe("/etc/systemd/system");

    // it ended (its lock is free): the new settings are in place, and the listener hears it
    locks.delete("gpu-1");
    expect(await registry.settle(holderOf)).toEqual([{ host: "gpu-1", swap: "sw-one" }]);
    expect(registry.config("gpu-1").unitDir).toBe("/etc/systemd/elsewhere");
    expect(registry.waiting()).toEqual([]);
    expect(settled).toEqual([[{ host: "gpu-1", swap: "sw-one" }]]);
  });

  it("the next swap on the host starts with the new settings: a lock held by another swap ends the wait", async () => {
    registry = new HostRegistry([host("gpu-1")], createLogger({ level: "silent" }));
    locks.set("gpu-1", "sw-one");
    await registry.update([host("gpu-1", { drainSeconds: 5 })], holderOf);
    locks.set("gpu-1", "sw-two");
    // a run of sw-two asks for its host alone before it reads it
    expect(await registry.settle(holderOf, "gpu-1")).toEqual([{ host: "gpu-1", swap: "sw-one" }]);
    expect(registry.config("gpu-1").drainSeconds).toBe(5);
  });

  it("a removed host a swap holds stays until the swap ends, then is gone", async () => {
    registry = new HostRegistry([host("gpu-1"), host("gpu-2")], createLogger({ level: "silent" }));
    locks.set("gpu-2", "sw-busy");
    await registry.update([host("gpu-1")], holderOf);
    expect(registry.names()).toEqual(["gpu-1", "gpu-2"]);
    expect(registry.config("gpu-2").name).toBe("gpu-2");
    locks.delete("gpu-2");
    await registry.settle(holderOf);
    expect(registry.names()).toEqual(["gpu-1"]);
  });

  it("when the locks cannot be read, a changed host waits, then for the swap found holding it", async () => {
    registry = new HostRegistry([host("gpu-1")], createLogger({ level: "silent" }));
    const deferred = await registry.update([host("gpu-1", { servingPort: 30009 })], unreadable);
    expect(deferred).toEqual([{ host: "gpu-1", swap: undefined }]);
    expect(await registry.settle(unreadable)).toEqual([]);
    locks.set("gpu-1", "sw-found");
    expect(await registry.settle(holderOf)).toEqual([]);
    expect(registry.waiting()).toEqual([{ host: "gpu-1", swap: "sw-found" }]);
    expect(registry.config("gpu-1").servingPort).toBe(30000);
    locks.delete("gpu-1");
    await registry.settle(holderOf);
    expect(registry.config("gpu-1").servingPort).toBe(30009);
  });

  it("a change undone before the swap ends leaves nothing waiting; a newer one replaces the older", async () => {
    registry = new HostRegistry([host("gpu-1")], createLogger({ level: "silent" }));
    locks.set("gpu-1", "sw-one");
    await registry.update([host("gpu-1", { servingPort: 30001 })], holderOf);
    await registry.update([host("gpu-1", { servingPort: 30002 })], holderOf);
    expect(registry.waiting()).toHaveLength(1);
    await registry.update([host("gpu-1")], holderOf);
    expect(registry.waiting()).toEqual([]);
    locks.delete("gpu-1");
    expect(await registry.settle(holderOf)).toEqual([]);
    expect(registry.config("gpu-1").servingPort).toBe(30000);
  });
});
