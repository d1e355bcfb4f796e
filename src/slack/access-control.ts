import type { WebClient } from "@slack/web-api";
import type { Principals } from "../config/file-schema.ts";
import type { Logger } from "../log.ts";

const GROUP_CACHE_MS = 5 * 60_000;

/**
 * Who may do what: configured user ids, plus members of configured user groups (looked up with
 * usergroups.users.list and cached, so an ack never waits on Slack more than once in five minutes).
 */
export class AccessControl {
  private readonly groups = new Map<string, { members: Set<string>; fetchedAt: number }>();

  constructor(
    private readonly requesters: Principals,
    private readonly approvers: Principals,
    private readonly client: WebClient,
    private readonly log: Logger,
  ) {}

  isRequester(user: string): Promise<boolean> {
    return this.isIn(this.requesters, user);
  }

  isApprover(user: string): Promise<boolean> {
    return this.isIn(this.approvers, user);
  }

  /** Requesters and approvers may read status and history. */
  async isMember(user: string): Promise<boolean> {
    return (await this.isRequester(user)) || (await this.isApprover(user));
  }

  private async isIn(principals: Principals, user: string): Promise<boolean> {
    if (principals.users.includes(user)) return true;
    for (const group of principals.groups) {
      if ((await this.members(group)).has(user)) return true;
    }
    return false;
  }

  private async members(group: string): Promise<Set<string>> {
    const cached = this.groups.get(group);
    if (cached !== undefined && Date.now() - cached.fetchedAt < GROUP_CACHE_MS) return cached.members;
    try {
      const result = await this.client.usergroups.users.list({ usergroup: group });
      const members = new Set(result.users ?? []);
      this.groups.set(group, { members, fetchedAt: Date.now() });
      return members;
    } catch (error) {
      this.log.warn({ group, err: (error as Error).message }, "could not read a user group's members");
      return cached?.members ?? new Set();
    }
  }
}
