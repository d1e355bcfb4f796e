import type { WebClient } from "@slack/web-api";
import type { Principals } from "../config/file-schema.ts";
import { CodedError } from "../errors.ts";
import { duration } from "../format-duration.ts";
import type { Logger } from "../log.ts";
import { slackErrorWord } from "./slack-error-word.ts";

/** A group's members are read again when older than this (or than the staleness limit, if lower). */
const GROUP_REFRESH_MS = 5 * 60_000;
/** `access.groupStalenessMinutes`'s default. */
export const DEFAULT_GROUP_STALENESS_MINUTES = 10;

export interface AccessOptions {
  /**
   * How old the members of a user group may be when Slack cannot be asked again: past this, nobody is
   * admitted through that group until Slack answers (`access.groupStalenessMinutes`).
   */
  groupStalenessMs?: number;
  /** Unix milliseconds (tests). */
  now?: () => number;
}

export interface LookupOptions {
  /**
   * Ask Slack for the groups' members now, whatever the cache holds (an approval is decided on who is
   * an approver at that moment, not when the members were last read); the cache is used only when Slack
   * cannot answer, and only within the staleness limit.
   */
  fresh?: boolean;
}

/**
 * Who may do what: configured user ids, plus members of configured user groups (looked up with
 * usergroups.users.list and cached for five minutes, so an ack rarely waits on Slack). When Slack cannot
 * be asked, the members last read are used for at most `groupStalenessMs` (10 minutes by default); after
 * that, and for a group never read, the check fails closed with SLACK_GROUP_UNAVAILABLE, which says the
 * group could not be checked (rather than that the person is not allowed).
 */
export class AccessControl {
  private readonly groups = new Map<string, { members: Set<string>; fetchedAt: number }>();
  private stalenessMs: number;
  private readonly now: () => number;

  constructor(
    private requesters: Principals,
    private approvers: Principals,
    private readonly client: WebClient,
    private readonly log: Logger,
    options: AccessOptions = {},
  ) {
    this.stalenessMs = options.groupStalenessMs ?? DEFAULT_GROUP_STALENESS_MINUTES * 60_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Who may do what from now on (a reloaded config): the next check uses the new lists. Members already
   * read of a group that stays listed are kept; those of a group no longer listed are forgotten.
   */
  update(
    requesters: Principals,
    approvers: Principals,
    options: Pick<AccessOptions, "groupStalenessMs"> = {},
  ): void {
    this.requesters = requesters;
    this.approvers = approvers;
    if (options.groupStalenessMs !== undefined) this.stalenessMs = options.groupStalenessMs;
    const listed = new Set([...requesters.groups, ...approvers.groups]);
    for (const group of this.groups.keys()) if (!listed.has(group)) this.groups.delete(group);
  }

  isRequester(user: string, options: LookupOptions = {}): Promise<boolean> {
    return this.isIn([this.requesters], user, options);
  }

  isApprover(user: string, options: LookupOptions = {}): Promise<boolean> {
    return this.isIn([this.approvers], user, options);
  }

  /** Requesters and approvers may read status and history. */
  isMember(user: string, options: LookupOptions = {}): Promise<boolean> {
    return this.isIn([this.requesters, this.approvers], user, options);
  }

  /**
   * Listed users first, then each group; a group that says yes admits even when another could not be
   * read. No, with a group that could not be read, is not a no: it throws.
   */
  private async isIn(lists: readonly Principals[], user: string, options: LookupOptions): Promise<boolean> {
    if (lists.some((p) => p.users.includes(user))) return true;
    let unreadable: CodedError | undefined;
    for (const group of new Set(lists.flatMap((p) => p.groups))) {
      try {
        if ((await this.members(group, options)).has(user)) return true;
      } catch (error) {
        unreadable ??= error as CodedError;
      }
    }
    if (unreadable !== undefined) throw unreadable;
    return false;
  }

  private async members(group: string, options: LookupOptions): Promise<Set<string>> {
    const cached = this.groups.get(group);
    const age = cached === undefined ? Number.POSITIVE_INFINITY : this.now() - cached.fetchedAt;
    if (cached !== undefined && options.fresh !== true && age < Math.min(GROUP_REFRESH_MS, this.stalenessMs))
      return cached.members;
    try {
      const result = await this.client.usergroups.users.list({ usergroup: group });
      const members = new Set(result.users ?? []);
      this.groups.set(group, { members, fetchedAt: this.now() });
      return members;
    } catch (error) {
      const slackError = slackErrorWord(error) ?? (error as Error).message;
      if (cached !== undefined && age <= this.stalenessMs) {
        this.log.warn(
          { group, slackError, ageSeconds: Math.round(age / 1000) },
          "could not read a user group's members: using the members read before",
        );
        return cached.members;
      }
      this.log.warn(
        { group, slackError, ageSeconds: cached === undefined ? undefined : Math.round(age / 1000) },
        "could not read a user group's members: nobody is admitted through it until Slack answers",
      );
      throw groupUnavailable(group, slackError, cached === undefined ? undefined : age, this.stalenessMs);
    }
  }
}

function groupUnavailable(
  group: string,
  slackError: string,
  ageMs: number | undefined,
  stalenessMs: number,
): CodedError {
  const limit = duration(stalenessMs / 1000);
  const when =
    ageMs === undefined
      ? "and has not been read since the bot started"
      : `and its members were last read ${duration(ageMs / 1000)} ago, more than the ${limit} access.groupStalenessMinutes allows`;
  return new CodedError(
    "SLACK_GROUP_UNAVAILABLE",
    `the user group ${group} could not be checked: Slack did not give its members (${slackError}), ${when}, so nobody is let in through it`,
    "try again in a minute; if it goes on, check Slack's status and that the app has the usergroups:read scope, or list the person's member id under requesters.users or approvers.users",
  );
}
