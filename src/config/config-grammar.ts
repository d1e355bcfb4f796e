import { z } from "zod";
import { FRONT_DOOR_NAME, FRONT_DOOR_NAME_RULE } from "../grammar/front-door-name.ts";
import { isRepoPart, REPO_PART_RULES } from "../grammar/model-ref.ts";
import { CHANNEL_ID, GROUP_ID, USER_ID } from "../grammar/slack-ids.ts";
import { UNIT_NAME } from "../grammar/unit-name.ts";
import { problem } from "../problem-text.ts";

/** Slack ids are uppercase letters and digits; users start with U or W, groups with S, channels with C or G. */
export const userId = z
  .string()
  .regex(
    USER_ID,
    problem(
      "not a Slack user id",
      "use the member id (U…), e.g. U0123ABCD, from the user's profile → ⋯ → Copy member ID",
    ),
  );

export const groupId = z
  .string()
  .regex(
    GROUP_ID,
    problem("not a Slack user group id", "use the group id (S…), e.g. S0123ABCD, not its @handle"),
  );

export const channelId = z
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
export const absolutePath = (what: string) =>
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
export const unitName = z
  .string()
  .regex(
    UNIT_NAME,
    problem(
      "not a systemd service name",
      "use the unit's full name, e.g. sglang-qwen.service (letters, digits and @._:-, starting with a letter or digit)",
    ),
  );

export const principals = z
  .strictObject({
    users: z.array(userId).default([]),
    groups: z.array(groupId).default([]),
  })
  .meta({ example: "{ users: [U0123ABCD], groups: [S0123ABCD] }" });

export const refGlob = z
  .string()
  .regex(
    /^[A-Za-z0-9._/*?-]{1,128}$/,
    problem("engine.allowedRefs entries are branch or tag name globs", "use e.g. main, release/*, v*"),
  );

export const hubOrg = z
  .string()
  .refine(
    isRepoPart,
    problem(
      `hub.remoteCodeOrgs entries are Hub org or user names (${REPO_PART_RULES})`,
      "use e.g. moonshotai",
    ),
  );

export const frontDoorName = (what: string) =>
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

export function gitUrl(what: string, example: string) {
  return z
    .string()
    .regex(
      /^(https:\/\/|file:\/\/|\/|git@)[A-Za-z0-9._/:@~+-]+$/,
      problem(`${what} is not a git URL`, `use e.g. ${example}`),
    );
}
