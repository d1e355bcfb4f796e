import { type Clock, isoNow, systemClock } from "../../src/clock.ts";
import { asCodedError, isRunOver } from "../../src/errors.ts";
import { by } from "../../src/grammar/person.ts";
import type { Logger } from "../../src/log.ts";
import { endedEarly, haltedEvent } from "../../src/rollout/rollout-hosts.ts";
import { rolloutPlanHash } from "../../src/rollout/rollout-plan-hash.ts";
import type { RolloutEvent, RolloutHost, RolloutRecord } from "../../src/rollout/rollout-record.ts";
import { judgeWave } from "../../src/rollout/wave-gate.ts";
import type { AuditEvent } from "../../src/store/audit-log.ts";
import { SYSTEM_ACTOR } from "../../src/store/audit-log.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import { takeSwapLease } from "../swap/swap-lease.ts";
import { planned, releaseHost } from "./release-host.ts";
import type { RolloutDeps, RolloutResult } from "./rollout-deps.ts";
import { undoFinished } from "./undo-finished.ts";

export type { RolloutDeps, RolloutResult };

/**
 * Runs a rollout forward from where its record says it is, under its lease (one run at a time; a saved
 * step is where a restarted worker goes on). The rollout never touches a host itself: its hosts' swaps
 * do, each under its own lease and fence. It gathers their plans into one plan for one approval, gives
 * that approval to each swap when its wave starts (at most maxUnavailable switching at once), holds the
 * next wave until the gate passes, and halts on a failure: the hosts not reached are cancelled (their
 * downloads kept), the finished waves left as they are, and the thread says so.
 */
export async function advanceRollout(id: string, deps: RolloutDeps): Promise<RolloutResult> {
  const leaseMs = deps.config.current().file.swaps.lockSeconds * 1000;
  const lease = await takeSwapLease(deps.store.locks, id, leaseMs);
  if (lease === undefined) return { done: false, waitMs: 1000 };
  try {
    const record = await deps.store.rollouts.get(id);
    if (record === undefined || record.step === "done") return { done: true };
    return await new RolloutRun(structuredClone(record), deps, lease.token).advance();
  } catch (error) {
    if (isRunOver(error)) {
      const { code, message } = asCodedError(error);
      deps.log.warn({ rollout: id, code }, `this run of the rollout stops, nothing saved: ${message}`);
      return { done: false, waitMs: 1000 };
    }
    throw error;
  } finally {
    await lease.release();
  }
}

class RolloutRun {
  private readonly events: RolloutEvent[] = [];
  private readonly audits: AuditEvent[] = [];
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(
    private readonly record: RolloutRecord,
    private readonly deps: RolloutDeps,
    private readonly token: string,
  ) {
    this.clock = deps.clock ?? systemClock;
    this.log = deps.log.child({ rollout: record.id });
  }

  private get pollMs(): number {
    return Math.max(250, Math.min(2000, this.deps.config.current().file.swaps.pollSeconds * 1000));
  }

  async advance(): Promise<RolloutResult> {
    for (let turns = 0; turns < 10; turns++) {
      const children = await this.children();
      await this.cancelAsked();
      const step = this.record.step;
      const result =
        step === "plan"
          ? await this.plan(children)
          : step === "approval"
            ? await this.approval(children)
            : step === "waves"
              ? await this.waves(children)
              : step === "halting"
                ? await this.halting(children)
                : ({ done: true } as const);
      await this.save();
      if (result === "again") continue;
      return result;
    }
    return { done: false, waitMs: 0 };
  }

  /** Every host's swap has planned (it waits in prepare with its plan hash): one plan, one approval. */
  private async plan(children: Map<string, SwapRecord>): Promise<RolloutResult | "again"> {
    const ended = endedEarly(this.record, children);
    if (ended !== undefined) return await this.fail(children, ended);
    if (!this.record.hosts.every((h) => planned(children.get(h.swapId))))
      return { done: false, waitMs: this.pollMs };
    for (const h of this.record.hosts) h.planHash = children.get(h.swapId)!.planHash!;
    this.requestApproval();
    return "again";
  }

  private async approval(children: Map<string, SwapRecord>): Promise<RolloutResult | "again"> {
    const ended = endedEarly(this.record, children);
    if (ended !== undefined) return await this.fail(children, ended);
    const changed = this.record.hosts.filter((h) => children.get(h.swapId)?.planHash !== h.planHash);
    if (changed.length > 0) {
      // a host's plan was made again (its engine build spells its flags differently): the rollout's plan
      // is another one now, and needs a decision of its own
      if (!this.record.hosts.every((h) => planned(children.get(h.swapId))))
        return { done: false, waitMs: this.pollMs };
      const before = this.record.planHash!;
      for (const h of this.record.hosts) h.planHash = children.get(h.swapId)!.planHash!;
      this.requestApproval({
        planHash: before,
        why: `the plan of ${changed.map((h) => h.host).join(", ")} changed`,
      });
      return "again";
    }
    const decision = await this.deps.store.approvals.decision(this.record.id, this.record.planHash!);
    if (decision?.approved === false) {
      this.record.decision = decision;
      return await this.end(children, "rejected", "rejected: no host was touched; downloaded files are kept");
    }
    if (decision?.approved === true) {
      this.record.decision = decision;
      this.record.step = "waves";
      this.startWave(0);
      return "again";
    }
    if (this.clock.now() > Date.parse(this.record.approval!.expiresAt)) {
      this.events.push({ type: "approval-closed", planHash: this.record.planHash!, why: "expired" });
      return await this.end(
        children,
        "expired",
        "nobody approved in time: no host was touched; downloaded files are kept",
      );
    }
    return { done: false, waitMs: this.pollMs };
  }

  private async waves(children: Map<string, SwapRecord>): Promise<RolloutResult | "again"> {
    const wave = this.record.wave;
    const members = this.record.hosts.filter((h) => h.wave === wave);
    // a host whose plan moved after the approval, or whose swap ended before its wave: the approval given
    // is not for what it would do now
    for (const h of members.filter((m) => m.releasedAt === undefined)) {
      const child = children.get(h.swapId);
      if (child === undefined || child.outcome !== undefined)
        return this.halt(
          `${h.host}'s swap ended before its wave (${child?.outcome ?? "its record is gone"}${child?.reason === undefined ? "" : `: ${child.reason}`})`,
        );
      if (child.planHash !== h.planHash)
        return this.halt(
          `${h.host}'s plan changed after the approval (its engine build): swap it on its own`,
        );
    }
    const switching = members.filter(
      (h) => h.releasedAt !== undefined && children.get(h.swapId)?.outcome === undefined,
    );
    let room = this.record.policy.maxUnavailable - switching.length;
    for (const h of members.filter((m) => m.releasedAt === undefined)) {
      if (room <= 0) break;
      await this.release(h, children.get(h.swapId)!);
      room--;
    }
    if (!members.every((h) => h.releasedAt !== undefined && children.get(h.swapId)?.outcome !== undefined))
      return { done: false, waitMs: this.pollMs };
    const result = this.record.waves.find((w) => w.wave === wave)!;
    const canary = this.record.waves.find((w) => w.wave === 0);
    const canaryFigures = Object.values(canary?.tokS ?? {});
    const canaryTokS = wave === 0 || canaryFigures.length === 0 ? undefined : Math.min(...canaryFigures);
    const verdict = judgeWave(
      members.map((h) => ({ host: h.host, record: children.get(h.swapId)! })),
      wave === 0 ? "canary" : canaryTokS,
      this.record.policy.throughputMargin,
    );
    result.tokS = verdict.tokS;
    result.endedAt = isoNow(this.clock);
    result.passed = verdict.passed;
    if (!verdict.passed) {
      result.why = verdict.why;
      return this.halt(`wave ${wave + 1} did not pass its gate: ${verdict.why}`);
    }
    this.events.push({
      type: "wave-passed",
      wave,
      tokS: verdict.tokS,
      ...(canaryTokS === undefined ? {} : { canaryTokS }),
    });
    const last = Math.max(...this.record.hosts.map((h) => h.wave));
    if (wave >= last) return await this.end(children, "succeeded");
    this.startWave(wave + 1);
    return "again";
  }

  /**
   * Waits for the halted wave's swaps to end (and those the halt cancelled); then takes back each host of
   * that wave whose own swap succeeded (the wave did not pass: it does not keep the new model), with a
   * rollback swap the rollout approves itself, and ends halted once those have ended. A cancel takes
   * nothing back: it stops, and says what finished.
   */
  private async halting(children: Map<string, SwapRecord>): Promise<RolloutResult | "again"> {
    const open = this.record.hosts.filter((h) => children.get(h.swapId)?.outcome === undefined);
    if (open.length > 0) {
      for (const h of open) await this.deps.swapJobs.wake(h.swapId).catch(() => undefined);
      return { done: false, waitMs: this.pollMs };
    }
    const wave = this.record.wave;
    const finished = this.record.hosts.filter(
      (h) => h.wave === wave && children.get(h.swapId)?.outcome === "succeeded",
    );
    if (this.record.cancel === undefined) {
      const undos = await undoFinished(this.record, finished, this.deps, isoNow(this.clock), () =>
        this.save(),
      );
      if (undos.waiting) return { done: false, waitMs: this.pollMs };
    }
    const undone = finished.filter((h) => h.undo?.outcome === "succeeded");
    this.events.push(haltedEvent(this.record, children, finished, undone));
    return await this.end(
      children,
      this.record.cancel === undefined ? "halted" : "cancelled",
      this.record.reason,
    );
  }

  /**
   * `/llm cancel <rollout>`: taken once, it stops the rollout as a halt does, before any host not started
   * yet (before the decision: before any at all); it ends cancelled.
   */
  private async cancelAsked(): Promise<void> {
    if (this.record.cancel !== undefined || this.record.step === "halting" || this.record.step === "done")
      return;
    const asked = await this.deps.store.approvals.cancelRequest(this.record.id);
    if (asked === undefined) return;
    this.record.cancel = asked;
    if (this.record.step === "approval" && this.record.planHash !== undefined)
      this.events.push({ type: "approval-closed", planHash: this.record.planHash, why: "cancelled" });
    await this.halt(`cancelled${by(asked.by)}`);
  }

  private requestApproval(replaces?: { planHash: string; why: string }): void {
    const ttl = this.deps.config.current().file.approvals.ttlMinutes;
    const expiresAt = new Date(this.clock.now() + ttl * 60_000).toISOString();
    this.record.planHash = rolloutPlanHash(this.record);
    this.record.approval = { requestedAt: isoNow(this.clock), expiresAt };
    this.record.step = "approval";
    this.events.push({
      type: "approval-requested",
      planHash: this.record.planHash,
      expiresAt,
      ...(replaces === undefined ? {} : { replaces }),
    });
  }

  private startWave(wave: number): void {
    this.record.wave = wave;
    this.record.waves.push({ wave, startedAt: isoNow(this.clock), tokS: {} });
    this.events.push({
      type: "wave-started",
      wave,
      hosts: this.record.hosts.filter((h) => h.wave === wave).map((h) => h.host),
    });
  }

  /** Gives the rollout's approval to one host's swap (release-host.ts); saved before its swap is woken. */
  private async release(h: RolloutHost, child: SwapRecord): Promise<void> {
    await releaseHost(this.deps.store, this.record, h, child, isoNow(this.clock));
    await this.save();
    await this.deps.swapJobs.wake(child.id).catch(() => undefined);
    this.log.info({ host: h.host, swap: child.id, wave: h.wave }, "rollout host released");
  }

  /**
   * Stops the rollout at the current wave: every host not released is cancelled (its swap ends before
   * the switch, its files kept); the finished waves stay as they are; the thread says which is which and
   * how to undo them.
   */
  private async halt(reason: string): Promise<RolloutResult | "again"> {
    const wave = this.record.wave;
    const untouched = this.record.hosts.filter((h) => h.releasedAt === undefined);
    await this.cancel(untouched.map((h) => h.swapId));
    this.record.reason = reason;
    this.record.step = "halting";
    this.log.warn({ wave, reason }, "rollout halted");
    return "again";
  }

  private async fail(children: Map<string, SwapRecord>, reason: string): Promise<RolloutResult | "again"> {
    return await this.end(children, "failed", `${reason}; no host was touched`);
  }

  /** The rollout's end: the swaps still waiting for it are cancelled, and it says how it ended. */
  private async end(
    children: Map<string, SwapRecord>,
    outcome: NonNullable<RolloutRecord["outcome"]>,
    reason?: string,
  ): Promise<RolloutResult> {
    const waiting = this.record.hosts.filter(
      (h) => h.releasedAt === undefined && children.get(h.swapId)?.outcome === undefined,
    );
    await this.cancel(waiting.map((h) => h.swapId));
    this.record.outcome = outcome;
    this.record.step = "done";
    this.record.finishedAt = isoNow(this.clock);
    if (reason !== undefined) this.record.reason = reason;
    this.events.push({ type: "finished", outcome, ...(reason === undefined ? {} : { reason }) });
    this.audits.push({
      at: this.record.finishedAt,
      kind: "outcome",
      who: SYSTEM_ACTOR,
      swap: this.record.id,
      detail: `rollout ${outcome}${reason === undefined ? "" : `: ${reason}`}`,
    });
    return { done: true };
  }

  private async cancel(swapIds: readonly string[]): Promise<void> {
    for (const id of swapIds) {
      await this.deps.store.approvals.requestCancel(id, SYSTEM_ACTOR, new Date(this.clock.now()));
      await this.deps.swapJobs.wake(id).catch(() => undefined);
    }
  }

  private async children(): Promise<Map<string, SwapRecord>> {
    const records = await Promise.all(this.record.hosts.map((h) => this.deps.store.swaps.get(h.swapId)));
    const map = new Map<string, SwapRecord>();
    for (const r of records) if (r !== undefined) map.set(r.id, r);
    return map;
  }

  private async save(): Promise<void> {
    const events = this.events.splice(0);
    const audit = this.audits.splice(0);
    await this.deps.store.rollouts.save(this.record, { events, audit, lease: this.token });
    // a rollout's look goes ahead of its hosts' progress: its plan waits for an approver, its wave lines
    // and card are what the channel follows (its hosts' own posts are never urgent: src/swap/urgency.ts)
    await this.deps.reports
      .soon(this.record.id, this.record.outcome === undefined ? "urgent" : "ended")
      .catch(() => undefined);
  }
}
