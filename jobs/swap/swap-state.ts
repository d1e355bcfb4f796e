import { type AuditEvent, SYSTEM_ACTOR } from "../../src/audit/audit-event.ts";
import { type Clock, isoNow } from "../../src/clock.ts";
import { CodedError } from "../../src/errors.ts";
import type { SwapState } from "../../src/swap/stage-context.ts";
import type { StoredSwapEvent, SwapEvent } from "../../src/swap/swap-events.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import {
  type DataPatch,
  LIFECYCLE_FIELDS,
  type SwapTransitions,
  transitions,
} from "../../src/swap/swap-transitions.ts";

const LIFECYCLE: ReadonlySet<string> = new Set(LIFECYCLE_FIELDS);

/** What a save writes besides the record: the events and audit entries queued since the last one. */
export interface Pending {
  events: StoredSwapEvent[];
  audit: AuditEvent[];
}

/**
 * The record of the swap being advanced, with the events and audit entries its stages queue. The run
 * saves it all together (one transaction) at each checkpoint; `drain` hands over what is pending and
 * `restore` puts it back when that save failed, so nothing is lost or written twice.
 */
export class RunningSwap implements SwapState {
  private pending: Pending = { events: [], audit: [] };

  constructor(
    private readonly current: SwapRecord,
    private readonly clock: Clock,
    private readonly persist: () => Promise<void>,
  ) {}

  get record(): Readonly<SwapRecord> {
    return this.current;
  }

  /** The record itself, for the run that saves it. */
  get mutable(): SwapRecord {
    return this.current;
  }

  set(patch: DataPatch): void {
    const lifecycle = Object.keys(patch).filter((key) => LIFECYCLE.has(key));
    if (lifecycle.length > 0)
      throw new CodedError(
        "INTERNAL",
        `swap ${this.current.id}: ${lifecycle.join(", ")} changed outside the record's transitions`,
        "this is a bug in modelswap: the swap stops here; the bot's log has the record",
      );
    this.apply(patch);
  }

  /** The lifecycle's named transitions, each applied to this record at the clock's time. */
  readonly to: SwapTransitions = Object.fromEntries(
    Object.entries(transitions).map(([name, transition]) => [
      name,
      (...args: unknown[]) =>
        this.apply(
          (transition as (r: SwapRecord, at: string, ...a: unknown[]) => Partial<SwapRecord>)(
            this.current,
            isoNow(this.clock),
            ...args,
          ),
        ),
    ]),
  ) as SwapTransitions;

  private apply(patch: Partial<SwapRecord>): void {
    Object.assign(this.current, patch);
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) delete (this.current as unknown as Record<string, unknown>)[key];
    }
  }

  stage(
    name: Parameters<SwapState["stage"]>[0],
    state: Parameters<SwapState["stage"]>[1],
    detail?: string,
  ): void {
    const current = this.current.stages[name];
    const at = isoNow(this.clock);
    const changed = current.state !== state;
    if (changed && state === "running") current.startedAt ??= at;
    if (changed && (state === "done" || state === "failed" || state === "skipped")) current.finishedAt = at;
    const ended = changed && (state === "done" || state === "failed");
    current.state = state;
    if (detail !== undefined) current.detail = detail;
    if (ended) {
      this.pending.audit.push({
        at,
        kind: "stage",
        who: SYSTEM_ACTOR,
        host: this.current.host,
        swap: this.current.id,
        stage: name,
        detail: `${name} ${state}${current.detail === undefined ? "" : `: ${current.detail}`}`,
      });
    }
  }

  async begin(name: Parameters<SwapState["begin"]>[0], detail: string): Promise<void> {
    this.stage(name, "running", detail);
    await this.persist();
  }

  audit(kind: AuditEvent["kind"], detail: string, who: string = SYSTEM_ACTOR): void {
    this.pending.audit.push({
      at: isoNow(this.clock),
      kind,
      who,
      host: this.current.host,
      swap: this.current.id,
      detail,
    });
  }

  emit(event: SwapEvent): void {
    this.pending.events.push({ ...event, at: isoNow(this.clock) } as StoredSwapEvent);
  }

  checkpoint(): Promise<void> {
    return this.persist();
  }

  drain(): Pending {
    const out = this.pending;
    this.pending = { events: [], audit: [] };
    return out;
  }

  /** A save that failed: its pending writes go first again at the next one. */
  restore(failed: Pending): void {
    this.pending = {
      events: [...failed.events, ...this.pending.events],
      audit: [...failed.audit, ...this.pending.audit],
    };
  }
}
