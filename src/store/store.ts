import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { ApprovalState } from "./approvals.ts";
import { AuditLog, DEFAULT_AUDIT_MAX_ENTRIES } from "./audit-log.ts";
import { EventDeliveries } from "./event-deliveries.ts";
import { HostState } from "./host-state.ts";
import { IncidentTracker, type Thresholds } from "./incidents.ts";
import { PeerCopies } from "./peer-copies.ts";
import { ReplicaAck } from "./replica-ack.ts";
import { ReportStates } from "./report-state.ts";
import { RolloutRecords } from "./rollouts.ts";
import { SignedRequests } from "./signed-requests.ts";
import { SwapLocks } from "./swap-locks.ts";
import { DEFAULT_RETENTION, type Retention, SwapRecords } from "./swap-records.ts";

export interface StoreOptions {
  /** Secret values that must never be stored: replaced by `[redacted]` in records, events and audit entries. */
  secrets?: readonly string[];
  /** How long finished swaps are kept. */
  retention?: Retention;
  /** `audit.maxEntries`. */
  auditMaxEntries?: number;
  /** The health monitor's thresholds (only the monitor records checks; readers need none). */
  health?: Thresholds;
  /**
   * Where a part reports a value in Redis it could not read and left out (STORE_RECORD_INVALID): the
   * health state, the audit stream. Default: a pino logger on stderr.
   */
  log?: Logger;
}

/**
 * Every piece of state modelswap keeps, in one Redis, behind one object: swap records and their events
 * and the ledger, host locks and swap leases, the approval gate's decisions and plan messages, what each
 * host serves, the reporter's progress, the health monitor's incidents, the audit stream, the swap
 * tally, the Events API deliveries already handled and the signed requests already accepted. Each part owns its keys (src/store/keys.ts) and
 * parses what it reads with its schema.
 */
export class Store {
  readonly audit: AuditLog;
  readonly swaps: SwapRecords;
  readonly rollouts: RolloutRecords;
  readonly peers: PeerCopies;
  readonly locks: SwapLocks;
  readonly approvals: ApprovalState;
  readonly hosts: HostState;
  readonly reports: ReportStates;
  readonly incidents: IncidentTracker;
  readonly deliveries: EventDeliveries;
  readonly signedRequests: SignedRequests;
  /** Asks a replica to confirm the writes that decide who touches a host (see ReplicaAck). */
  readonly replicas: ReplicaAck;

  constructor(
    readonly redis: RedisClient,
    options: StoreOptions = {},
  ) {
    const secrets = options.secrets ?? [];
    this.replicas = new ReplicaAck(redis, options.log);
    this.audit = new AuditLog(redis, {
      maxEntries: options.auditMaxEntries ?? DEFAULT_AUDIT_MAX_ENTRIES,
      secrets,
      ...(options.log === undefined ? {} : { log: options.log }),
    });
    this.swaps = new SwapRecords(
      redis,
      this.audit,
      secrets,
      options.retention ?? DEFAULT_RETENTION,
      this.replicas,
    );
    this.rollouts = new RolloutRecords(
      redis,
      this.audit,
      secrets,
      (options.retention ?? DEFAULT_RETENTION).finishedDays,
      this.replicas,
    );
    this.peers = new PeerCopies(redis);
    this.locks = new SwapLocks(redis, this.replicas);
    this.approvals = new ApprovalState(redis, this.audit, secrets, this.replicas);
    this.hosts = new HostState(redis);
    this.reports = new ReportStates(redis);
    // thresholds only matter when recording checks: reading a host's health needs none
    this.incidents = new IncidentTracker(
      redis,
      options.health ?? { failureThreshold: 3, recoveryThreshold: 2, claimTimeoutMs: 60_000 },
      options.log,
    );
    this.deliveries = new EventDeliveries(redis);
    this.signedRequests = new SignedRequests(redis);
  }
}
