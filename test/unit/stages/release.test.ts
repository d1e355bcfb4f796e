import { describe, expect, it } from "vitest";
import { releaseStage } from "../../../jobs/swap/stages/front-door.ts";
import { CodedError } from "../../../src/errors.ts";
import type { Fake } from "./fake-stage-context.ts";
import { ago, lateContext, withFrontDoor } from "./late-stage-fixtures.ts";

/** A front door whose first `failures` changes are refused (HAProxy reloading), then done. */
function frontDoor(fake: Fake, failures: number): { changes: string[][] } {
  const seen = { changes: [] as string[][] };
  let left = failures;
  withFrontDoor(fake, {
    async setStates(changes) {
      seen.changes.push(changes.map(([server, state]) => `${server} ${state}`));
      if (left-- > 0)
        throw new CodedError(
          "FRONT_DOOR_UNREACHABLE",
          "nothing answers on HAProxy's socket",
          "start HAProxy",
        );
    },
  });
  return seen;
}

const held = () =>
  lateContext({ record: { step: "release", frontDoor: { heldAt: ago(30), drainedAt: ago(28), cut: 0 } } });

describe("the release step", () => {
  it("readies the unit's slot and takes the hold out on one line, records it and says how long requests were held", async () => {
    const fake = held();
    const door = frontDoor(fake, 0);
    expect(await releaseStage(fake.ctx)).toEqual({ next: "benchmark" });
    expect(door.changes).toEqual([["blue ready", "hold maint"]]);
    expect(fake.swap.record.frontDoor?.releasedAt).toBeDefined();
    expect(fake.events()).toMatchObject([{ type: "released", server: "blue", heldSeconds: 30 }]);
  });

  it("tries again when HAProxy does not answer for a moment: a healthy, sane model is not rolled back for it", async () => {
    const fake = held();
    const door = frontDoor(fake, 2);
    expect(await releaseStage(fake.ctx)).toEqual({ next: "benchmark" });
    expect(door.changes).toHaveLength(3);
  });

  it("fails after its tries, with the front door's error (the swap then rolls back behind the hold)", async () => {
    const fake = held();
    const door = frontDoor(fake, 10);
    await expect(releaseStage(fake.ctx)).rejects.toMatchObject({ code: "FRONT_DOOR_UNREACHABLE" });
    expect(door.changes).toHaveLength(4);
    expect(fake.swap.record.frontDoor?.releasedAt).toBeUndefined();
  });

  it("does nothing on a host without a front door", async () => {
    const fake = lateContext({ record: { step: "release" } });
    expect(await releaseStage(fake.ctx)).toEqual({ next: "benchmark" });
    expect(fake.host.commands).toEqual([]);
  });
});
