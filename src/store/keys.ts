/**
 * Every Redis key modelswap writes, in one place. All start with the deployment's hash tag, so they share
 * one Redis Cluster slot and the store's multi-key scripts and MULTI blocks work there. BullMQ's keys are
 * `{modelswap}:<queue>:…` (queues: commands, swaps, monitor, reports); the store's own keys live under
 * `{modelswap}:store:`, a name no queue takes, so obliterating or cleaning a queue never touches them.
 */
export const HASH_TAG = "{modelswap}";

/** The queues' prefix (BullMQ's `prefix` option). */
export const QUEUE_PREFIX = HASH_TAG;

const STORE = `${HASH_TAG}:store`;

/** The name no queue may take: the store's namespace. */
export const STORE_NAMESPACE = "store";

/** The version of the key layout and record shape; `migrate()` brings older deployments here. */
export const STORE_VERSION = 3;

export const keys = {
  version: `${STORE}:version`,
  migrationLock: `${STORE}:migrating`,

  /** A swap's record (JSON), its events (a list of JSON), its reporter's state (a hash). */
  swap: (id: string) => `${STORE}:swap:${id}`,
  swapEvents: (id: string) => `${STORE}:swap:${id}:events`,
  swapReport: (id: string) => `${STORE}:swap:${id}:report`,
  swapReportLock: (id: string) => `${STORE}:swap:${id}:report:lock`,
  /** Who may advance the swap now (a token with a TTL). */
  swapLease: (id: string) => `${STORE}:swap:${id}:lease`,
  /** The fence numbers' counter: every lease taken gets the next one (src/host/fence.ts). */
  fence: `${STORE}:fence`,
  /** A cancel request (first wins). */
  swapCancel: (id: string) => `${STORE}:swap:${id}:cancel`,
  /** The decisions on a swap's plans: plan hash → decision (the first on each plan wins). */
  decisions: (id: string) => `${STORE}:swap:${id}:decisions`,

  /**
   * A rollout's record (JSON). Its events, reporter state, lease, decisions and cancel use the swap keys
   * above under the rollout's id (`ro-…`, never a swap's), so the reporter and the approval gate serve both.
   */
  rollout: (id: string) => `${STORE}:rollout:${id}`,
  /** Rollout ids by creation time. */
  rollouts: `${STORE}:rollouts`,
  /**
   * A rollout's peer copies (src/store/peer-copies.ts): the hosts serving its files (hash host → source),
   * the copies each serves now (hash host → count), who copies from whom (hash host → host), the hosts
   * that cannot serve (hash host → why), and the rollout's copy key (JSON; never in a record or a log).
   */
  peerSources: (id: string) => `${STORE}:rollout:${id}:peers`,
  peerLoad: (id: string) => `${STORE}:rollout:${id}:peer-load`,
  peerClaims: (id: string) => `${STORE}:rollout:${id}:peer-claims`,
  peerUnable: (id: string) => `${STORE}:rollout:${id}:peer-unable`,
  peerKey: (id: string) => `${STORE}:rollout:${id}:peer-key`,

  /** The ledger: swap ids by creation time, of all hosts and of one. */
  ledger: `${STORE}:ledger`,
  hostLedger: (host: string) => `${STORE}:ledger:host:${host}`,

  /** The swap that holds a host (one active swap per host). */
  hostLock: (host: string) => `${STORE}:host:${host}:lock`,
  /** What a host serves, as modelswap last left it, and the last benchmark there. */
  serving: (host: string) => `${STORE}:host:${host}:serving`,
  benchmark: (host: string) => `${STORE}:host:${host}:benchmark`,
  /** The health monitor's state of a host (a hash), and the slot of the check running now. */
  health: (host: string) => `${STORE}:host:${host}:health`,
  healthCheck: (host: string) => `${STORE}:host:${host}:health:checking`,
  /** How late the monitor's checks started against their schedule, fleet-wide (a hash: a histogram). */
  monitorLateness: `${STORE}:monitor:lateness`,

  /** A plan message in Slack → the swap and the plan hash it shows. */
  planMessage: (channel: string, ts: string) => `${STORE}:plan-message:${channel}:${ts}`,
  /** An Events API delivery already taken. */
  delivery: (eventId: string) => `${STORE}:delivery:${eventId}`,
  /** A signed HTTP request from Slack already accepted (its timestamp and signature), for its window. */
  signedRequest: (timestamp: number, signature: string) => `${STORE}:slack-request:${timestamp}:${signature}`,
  /** Swaps whose events or card the reporter has not caught up with yet (score: since when). */
  reportsPending: `${STORE}:reports:pending`,

  /** The append-only audit stream. */
  audit: `${STORE}:audit`,
  /** The pub/sub channel on which a process says which config file it has just loaded (not a key). */
  configNotes: `${STORE}:config-loaded`,
  /** The deployment's swap metrics and the swaps already counted in them. */
  tally: `${STORE}:tally`,
  tallied: `${STORE}:tally:swaps`,
} as const;

/** Every key of one swap (its plan messages expire on their own). */
export function swapKeys(id: string): string[] {
  return [keys.swap(id), keys.swapEvents(id), keys.swapReport(id), keys.swapCancel(id), keys.decisions(id)];
}
