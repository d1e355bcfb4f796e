/**
 * A host's front door: the one stable address clients use, with the serving units behind it as named
 * server slots (e.g. `blue` and `green`). modelswap only steers it — which slot takes new requests, where
 * a slot points — and reads how many requests each slot has in flight; the front door's configuration is
 * the operator's. HAProxy's Runtime API implements it today (haproxy-front-door.ts); SGLang's gateway
 * (smg: `POST /workers`, `DELETE /workers/<url>`) could implement the same shape later, a slot being a
 * worker URL it adds (ready), stops routing to (drain) or removes (maint).
 */
export interface FrontDoor {
  /** What it is, for messages: e.g. `HAProxy backend sglang (socket /run/haproxy/admin.sock on gpu-1)`. */
  readonly description: string;
  /** Every server slot of the backend modelswap steers, in the front door's order. */
  servers(): Promise<FrontDoorServer[]>;
  /** One slot; FRONT_DOOR_UNKNOWN_SERVER when there is none of that name. */
  server(name: string): Promise<FrontDoorServer>;
  /**
   * `ready`: takes new requests. `drain`: no new requests (requests already in flight, and streams,
   * run to their end). `maint`: no traffic at all (in-flight requests are not cut by this alone).
   * Resolves once the front door reports the new state.
   */
  setState(server: string, state: ServerState): Promise<void>;
  /**
   * Several slots' states at once, in order, with no request handled between the changes (HAProxy: one
   * Runtime API line); resolves once the front door reports every one.
   */
  setStates(changes: readonly (readonly [server: string, state: ServerState])[]): Promise<void>;
  /** Points the slot at another address (an IP, never a name) and port; resolves once it reports it. */
  setAddress(server: string, address: string, port: number): Promise<void>;
  /** Requests the slot has in flight now (HAProxy: its current sessions, `scur`). */
  sessions(server: string): Promise<number>;
}

/** The administrative states modelswap sets. */
export const SERVER_STATES = ["ready", "drain", "maint"] as const;
export type ServerState = (typeof SERVER_STATES)[number];

export interface FrontDoorServer {
  name: string;
  /** The administrative state (set by modelswap or the operator). */
  state: ServerState;
  /**
   * Whether the front door would send to it, by its own view: `up`, `down` (its check failed, or it is in
   * `maint`: the front door holds it stopped), `starting` (coming up, throttled), `stopping`
   * (soft-stopping), or `unchecked` when it is up without a health check (a request to it is sent, and
   * retried while its port refuses connections: the hold).
   */
  health: "up" | "down" | "starting" | "stopping" | "unchecked";
  address: string;
  port: number;
  /** Requests in flight to it now. */
  sessions: number;
  /** Requests waiting in its queue (its `maxconn` reached). */
  queued: number;
}
