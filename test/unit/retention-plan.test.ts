import { describe, expect, it } from "vitest";
import { parseGcArgs } from "../../commands/gc.ts";
import { retentionSchema } from "../../src/config/retention-schema.ts";
import { parseDisk } from "../../src/retention/host-disk.ts";
import {
  type DiskItem,
  OURS_MARK,
  retentionPlan,
  type UnitFile,
} from "../../src/retention/retention-plan.ts";

/** What disk retention keeps and why, from a host's disk as read, and `/llm gc`'s words. */
const M = "/srv/models";
const DAY = 86_400;
const model = (name: string, mtime: number, bytes = 1e9): DiskItem => ({
  kind: "model",
  path: `${M}/${name}`,
  name,
  bytes,
  mtime,
});
const unit = (name: string, mtime: number, names: string, extra: Partial<UnitFile> = {}): UnitFile => ({
  kind: "unit",
  path: `/etc/systemd/system/${name}`,
  name,
  bytes: 4096,
  mtime,
  ours: true,
  active: false,
  enabled: false,
  text: `${OURS_MARK}sw-x\n[Service]\nExecStart=/venv/bin/python -m sglang.launch_server --model-path ${names}\n`,
  ...extra,
});

describe("the retention decision", () => {
  const disk = {
    freeBytes: 0,
    builds: [],
    caches: [],
    models: [
      model("org--a--00000000000a", 1 * DAY),
      model("org--b--00000000000b", 2 * DAY),
      model("org--c--00000000000c", 3 * DAY),
      model("org--d--00000000000d", 4 * DAY),
      model("org--fresh--00000000000f", 9 * DAY),
      model("datasets", 1 * DAY),
      model("org--pin--000000000001", 1 * DAY),
    ],
    units: [
      unit("sglang-a.service", 1 * DAY + 10, `${M}/org--a--00000000000a`),
      unit("sglang-b.service", 2 * DAY + 10, `${M}/org--b--00000000000b`),
      unit("sglang-c.service", 3 * DAY + 10, `${M}/org--c--00000000000c`),
      unit("sglang-d.service", 4 * DAY + 10, `${M}/org--d--00000000000d`),
    ],
  };

  it("keeps what serves, the one before, what they name, a newer download, the pinned and what it did not make", () => {
    const plan = retentionPlan(disk, {
      keep: 2,
      pinned: ["org--pin--000000000001"],
      serving: ["sglang-d.service"],
    });
    const why = (v: { item: DiskItem; why: string }) => [v.item.name, v.why];
    expect(plan.remove.map(why)).toEqual([
      ["sglang-b.service", expect.stringContaining("old unit file")],
      ["sglang-a.service", expect.stringContaining("old unit file")],
      ["org--b--00000000000b", expect.stringContaining("no unit file left names it")],
      ["org--a--00000000000a", expect.stringContaining("no unit file left names it")],
    ]);
    expect(Object.fromEntries(plan.keep.map(why))).toMatchObject({
      "sglang-d.service": "serves now",
      "sglang-c.service": "one of the last 2 units that served (what a rollback goes back to)",
      "org--d--00000000000d": "named by sglang-d.service",
      "org--c--00000000000c": "named by sglang-c.service",
      "org--fresh--00000000000f": expect.stringContaining("a download no swap has switched to yet"),
      "org--pin--000000000001": "pinned (retention.pinned)",
      datasets: expect.stringContaining("not made by modelswap"),
    });
    expect(plan.reclaimableBytes).toBe(2e9 + 2 * 4096);
  });

  it("never lets go of a unit that runs or is enabled, nor one modelswap did not write, nor what they name", () => {
    const plan = retentionPlan(
      {
        ...disk,
        units: [
          unit("sglang-a.service", DAY, `${M}/org--a--00000000000a`, { enabled: true }),
          unit("sglang-b.service", DAY, `${M}/org--b--00000000000b`, { active: true }),
          unit("other.service", DAY, `${M}/org--c--00000000000c`, { ours: false }),
          unit("sglang-d.service", 4 * DAY + 10, `${M}/org--d--00000000000d`),
        ],
      },
      { keep: 1, pinned: [], serving: ["sglang-d.service"] },
    );
    expect(plan.remove.map((v) => v.item.name)).toEqual(["org--pin--000000000001"]);
  });

  it("keeps the compile caches a kept unit names, and lets go of the others", () => {
    const cache = (name: string, mtime: number): DiskItem => ({
      kind: "cache",
      path: `${M}/.modelswap/caches/${name}`,
      name,
      bytes: 3e9,
      mtime,
    });
    const named = "sglang-43da92d5c0ff-sm120-aaaaaaaaaaaa-0123abcd";
    const unnamed = "sglang-43da92d5c0ff-sm120-bbbbbbbbbbbb-0123abcd";
    const plan = retentionPlan(
      {
        ...disk,
        caches: [cache(named, DAY), cache(unnamed, DAY), cache("someone-elses", DAY)],
        units: [
          unit(
            "sglang-d.service",
            4 * DAY + 10,
            `${M}/org--d--00000000000d\nEnvironment=TRITON_CACHE_DIR=${M}/.modelswap/caches/${named}/triton`,
          ),
        ],
      },
      { keep: 1, pinned: [], serving: ["sglang-d.service"] },
    );
    const verdict = (name: string) =>
      [...plan.keep, ...plan.remove].find((v) => v.item.name === name && v.item.kind === "cache");
    expect(plan.keep).toContainEqual(verdict(named));
    expect(verdict(named)?.why).toBe("named by sglang-d.service");
    expect(plan.remove).toContainEqual(verdict(unnamed));
    expect(verdict("someone-elses")?.why).toMatch(/not made by modelswap/);
    expect(plan.keep).toContainEqual(verdict("someone-elses"));
  });

  it("reads a path that only begins with a named one as not named", () => {
    const plan = retentionPlan(
      {
        freeBytes: 0,
        builds: [],
        caches: [],
        models: [model("org--a--00000000000a", DAY), model("org--a--00000000000a2", DAY)],
        units: [unit("sglang-a.service", 2 * DAY, `${M}/org--a--00000000000a2/`)],
      },
      { keep: 1, pinned: [], serving: ["sglang-a.service"] },
    );
    expect(plan.remove.map((v) => v.item.name)).toEqual(["org--a--00000000000a"]);
  });
});

describe("the host's answer", () => {
  it("leaves out lines it cannot read and paths with .. in them", () => {
    const text = Buffer.from(`${OURS_MARK}sw-1\n`).toString("base64");
    const disk = parseDisk(
      [
        `root\t${M}`,
        "free\t123",
        `model\t1000\t1700000000\t${M}/org--a--00000000000a`,
        `model\t1000\t1700000000\t${M}/../etc`,
        "model\tnot-a-number\t1\t/x",
        `unit\t4096\t1700000000\tinactive\tdisabled\t${text}\t/etc/systemd/system/sglang-a.service`,
        `cache\t5000\t1700000000\t${M}/.modelswap/caches/sglang-43da92d5c0ff-sm120-aaaaaaaaaaaa-0123abcd`,
      ].join("\n"),
    );
    expect(disk.caches.map((c) => [c.kind, c.name])).toEqual([
      ["cache", "sglang-43da92d5c0ff-sm120-aaaaaaaaaaaa-0123abcd"],
    ]);
    expect(disk.freeBytes).toBe(123);
    expect(disk.models.map((m) => m.name)).toEqual(["org--a--00000000000a"]);
    expect(disk.units).toMatchObject([
      { name: "sglang-a.service", ours: true, active: false, enabled: false },
    ]);
  });
});

describe("/llm gc's words", () => {
  it("takes a host and --dry-run; refuses anything else, naming what is accepted", () => {
    expect(parseGcArgs([])).toEqual({ ok: true, dryRun: false });
    expect(parseGcArgs(["gpu-1", "--dry-run"])).toEqual({ ok: true, host: "gpu-1", dryRun: true });
    expect(parseGcArgs(["—dry-run"])).toEqual({ ok: true, dryRun: true });
    expect(parseGcArgs(["--dyr-run"])).toEqual({
      ok: false,
      reason: "unknown option `--dyr-run` (did you mean `--dry-run`?): the one option is `--dry-run`",
    });
    expect(parseGcArgs(["--dry-run=yes"])).toEqual({ ok: false, reason: "`--dry-run` takes no value" });
    expect(parseGcArgs(["a", "b"])).toEqual({ ok: false, reason: "name at most one host" });
  });

  it("admits retention settings only in the accepted forms", () => {
    expect(retentionSchema.parse({})).toEqual({ keep: 2, pinned: [], afterSwap: true });
    expect(retentionSchema.safeParse({ keep: 0 }).success).toBe(false);
    expect(retentionSchema.safeParse({ pinned: ["/srv/models/../etc"] }).success).toBe(false);
    expect(retentionSchema.safeParse({ pinned: ["a b; rm -rf /"] }).success).toBe(false);
    expect(retentionSchema.safeParse({ pinned: ["org--a--0123456789ab", "/srv/models/x"] }).success).toBe(
      true,
    );
  });
});
