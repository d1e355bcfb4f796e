import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import type {
  DeliveryResult,
  JsonObject,
  SocketConnection,
  SocketDisconnectReason,
  SocketEnvelope,
  SocketEnvelopeType,
} from "./types.ts";

/** Slack allows an app up to 10 open Socket Mode connections at once. */
const MAX_CONNECTIONS = 10;
/** A URL from apps.connections.open is good for one connection, soon. */
const TICKET_TTL_MS = 5 * 60 * 1000;
/** What `hello` announces: roughly how long Slack keeps a connection before it refreshes it (s). */
const APPROXIMATE_CONNECTION_TIME_S = 18_060;

export interface SocketModeLinkOptions {
  appId: string;
  /** ws:// origin of the emulator, e.g. ws://127.0.0.1:4567 */
  origin: string;
  /** Slack pings every connection; 0 turns it off. */
  pingIntervalMs: number;
}

interface LiveConnection {
  info: SocketConnection;
  ws: WebSocket;
  ping?: NodeJS.Timeout;
  closeTimer?: NodeJS.Timeout;
}

interface PendingAck {
  envelope: SocketEnvelope;
  resolve(result: DeliveryResult): void;
}

export interface EnvelopeInput {
  type: SocketEnvelopeType;
  payload: JsonObject;
  acceptsResponsePayload: boolean;
  /** events_api only: 0 on the first delivery, 1..3 on Slack's retries. */
  retryAttempt?: number;
  retryReason?: string;
}

/**
 * Slack's side of Socket Mode: single-use `wss://…/link/?ticket=…` URLs handed out by
 * `apps.connections.open`, a WebSocket server that says `hello`, wraps every delivery in an envelope and
 * waits for the app's `{ envelope_id, payload? }` ack, and `disconnect` messages that ask the app to
 * reconnect. Deliveries go to the open connections in turn (Slack may use any of them).
 */
export class SocketModeLink {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly tickets = new Map<string, number>();
  private readonly live: LiveConnection[] = [];
  private readonly all: SocketConnection[] = [];
  private readonly pending = new Map<string, PendingAck>();
  readonly envelopes: SocketEnvelope[] = [];
  private nextConnection = 1;
  private turn = 0;

  constructor(private readonly opts: SocketModeLinkOptions) {}

  /** A fresh URL for one connection (what apps.connections.open answers). */
  issueUrl(): string {
    const ticket = randomUUID();
    this.tickets.set(ticket, Date.now());
    return `${this.opts.origin}/link/?ticket=${ticket}&app_id=${this.opts.appId}`;
  }

  /** @internal the emulator server's `upgrade` listener. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "ws://localhost");
    const ticket = url.searchParams.get("ticket") ?? "";
    const issuedAt = this.tickets.get(ticket);
    if (url.pathname !== "/link/" && url.pathname !== "/link") {
      refuse(socket, 404, "Not Found");
      return;
    }
    // a ticket opens one connection; an old or made-up one is refused before the WebSocket handshake
    if (issuedAt === undefined || Date.now() - issuedAt > TICKET_TTL_MS) {
      this.tickets.delete(ticket);
      refuse(socket, 401, "Unauthorized");
      return;
    }
    this.tickets.delete(ticket);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, ticket));
  }

  private accept(ws: WebSocket, ticket: string): void {
    const info: SocketConnection = {
      id: this.nextConnection++,
      ticket,
      openedAt: Date.now(),
      open: true,
      disconnects: [],
      acks: 0,
    };
    const conn: LiveConnection = { info, ws };
    this.all.push(info);
    ws.on("message", (data, isBinary) => this.onMessage(conn, data.toString(), isBinary));
    ws.on("close", (code) => this.onClose(conn, code));
    ws.on("error", () => undefined); // a reset connection closes; the close handler does the rest
    if (this.live.length >= MAX_CONNECTIONS) {
      this.live.push(conn);
      this.sendDisconnect(conn, "too_many_websockets");
      ws.close(1008, "too many websockets");
      return;
    }
    this.live.push(conn);
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: this.live.length,
        debug_info: {
          host: `applink-emulator-${info.id}`,
          started: new Date(info.openedAt).toISOString().replace("T", " ").slice(0, 23),
          build_number: 1,
          approximate_connection_time: APPROXIMATE_CONNECTION_TIME_S,
        },
        connection_info: { app_id: this.opts.appId },
      }),
    );
    info.helloAt = Date.now();
    if (this.opts.pingIntervalMs > 0) {
      conn.ping = setInterval(() => {
        if (ws.readyState === ws.OPEN) ws.ping(Buffer.from(`ping ${Date.now()}`));
      }, this.opts.pingIntervalMs);
      conn.ping.unref();
    }
  }

  private onMessage(conn: LiveConnection, text: string, isBinary: boolean): void {
    if (isBinary) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return; // Slack ignores what it cannot parse
    }
    if (typeof message !== "object" || message === null) return;
    const { envelope_id: envelopeId, payload } = message as JsonObject;
    if (typeof envelopeId !== "string") return;
    conn.info.acks += 1;
    const ackPayload =
      typeof payload === "object" && payload !== null && !Array.isArray(payload)
        ? (payload as JsonObject)
        : {};
    const waiting = this.pending.get(envelopeId);
    const envelope = waiting?.envelope ?? this.envelopes.find((e) => e.envelope_id === envelopeId);
    if (envelope === undefined || envelope.ackedAt !== undefined) return;
    envelope.ackedAt = Date.now();
    envelope.ackPayload = ackPayload;
    if (waiting === undefined) {
      envelope.late = true; // Slack stopped waiting for it already
      return;
    }
    this.pending.delete(envelopeId);
    waiting.resolve({
      status: 200,
      body: Object.keys(ackPayload).length === 0 ? "" : JSON.stringify(ackPayload),
      ackMs: envelope.ackedAt - envelope.sentAt,
      timedOut: false,
      envelopeId,
    });
  }

  private onClose(conn: LiveConnection, code: number): void {
    conn.info.open = false;
    conn.info.closedAt = Date.now();
    conn.info.closeCode = code;
    conn.info.closedBy ??= "app";
    clearInterval(conn.ping);
    clearTimeout(conn.closeTimer);
    const index = this.live.indexOf(conn);
    if (index >= 0) this.live.splice(index, 1);
    for (const [id, waiting] of this.pending) {
      if (waiting.envelope.connection !== conn.info.id) continue;
      this.pending.delete(id);
      waiting.resolve({
        status: 0,
        body: "",
        ackMs: Date.now() - waiting.envelope.sentAt,
        timedOut: false,
        networkError: "the Socket Mode connection closed before the ack",
        envelopeId: id,
      });
    }
  }

  /** Connections that said hello and are still open. */
  private openConnections(): LiveConnection[] {
    return this.live.filter((c) => c.info.helloAt !== undefined && c.ws.readyState === c.ws.OPEN);
  }

  /** Sends one envelope over an open connection and waits up to `deadlineMs` for its ack. */
  async deliver(input: EnvelopeInput, deadlineMs: number): Promise<DeliveryResult> {
    const open = this.openConnections();
    if (open.length === 0) {
      return {
        status: 0,
        body: "",
        ackMs: 0,
        timedOut: false,
        networkError: "no open Socket Mode connection",
      };
    }
    const conn = open[this.turn++ % open.length] as LiveConnection;
    const envelope: SocketEnvelope = {
      envelope_id: randomUUID(),
      type: input.type,
      payload: input.payload,
      accepts_response_payload: input.acceptsResponsePayload,
      connection: conn.info.id,
      sentAt: Date.now(),
    };
    if (input.type === "events_api") {
      envelope.retry_attempt = input.retryAttempt ?? 0;
      envelope.retry_reason = input.retryReason ?? "";
    }
    this.envelopes.push(envelope);
    const result = new Promise<DeliveryResult>((resolve) => {
      this.pending.set(envelope.envelope_id, { envelope, resolve });
    });
    const timer = setTimeout(() => {
      const waiting = this.pending.get(envelope.envelope_id);
      if (waiting === undefined) return;
      this.pending.delete(envelope.envelope_id);
      waiting.resolve({
        status: 0,
        body: "",
        ackMs: Date.now() - envelope.sentAt,
        timedOut: true,
        envelopeId: envelope.envelope_id,
      });
    }, deadlineMs);
    conn.ws.send(JSON.stringify(wireEnvelope(envelope)));
    const outcome = await result;
    clearTimeout(timer);
    return outcome;
  }

  /**
   * Sends `{ type: "disconnect", reason }` on every open connection (or one, by id), as Slack does before
   * it refreshes a connection or when Socket Mode is turned off. The app is expected to close it and
   * connect again; Slack closes it itself after `closeAfterMs` (about 10 s) if the app does not.
   */
  disconnect(
    reason: SocketDisconnectReason,
    opts: { connection?: number; closeAfterMs?: number } = {},
  ): number {
    const targets = this.openConnections().filter(
      (c) => opts.connection === undefined || c.info.id === opts.connection,
    );
    for (const conn of targets) {
      this.sendDisconnect(conn, reason);
      conn.closeTimer = setTimeout(() => {
        conn.info.closedBy ??= "slack";
        conn.ws.terminate();
      }, opts.closeAfterMs ?? 10_000);
      conn.closeTimer.unref();
    }
    return targets.length;
  }

  private sendDisconnect(conn: LiveConnection, reason: SocketDisconnectReason): void {
    conn.info.disconnects.push(reason);
    conn.ws.send(
      JSON.stringify({
        type: "disconnect",
        reason,
        debug_info: { host: `applink-emulator-${conn.info.id}` },
      }),
    );
  }

  /** Cuts every open connection without a word (a network failure): no close frame, no disconnect message. */
  drop(): number {
    const targets = [...this.live];
    for (const conn of targets) {
      conn.info.closedBy = "slack";
      conn.ws.terminate();
    }
    return targets.length;
  }

  connections(): SocketConnection[] {
    return this.all.map((c) => ({ ...c, disconnects: [...c.disconnects] }));
  }

  async close(): Promise<void> {
    for (const conn of [...this.live]) {
      conn.info.closedBy ??= "slack";
      conn.ws.terminate();
    }
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}

/** The envelope as Slack writes it (our bookkeeping fields stay home). */
function wireEnvelope(envelope: SocketEnvelope): JsonObject {
  const wire: JsonObject = {
    envelope_id: envelope.envelope_id,
    payload: envelope.payload,
    type: envelope.type,
    accepts_response_payload: envelope.accepts_response_payload,
  };
  if (envelope.retry_attempt !== undefined) wire.retry_attempt = envelope.retry_attempt;
  if (envelope.retry_reason !== undefined) wire.retry_reason = envelope.retry_reason;
  return wire;
}

function refuse(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** An app-level token as Slack mints them: xapp-1-<app id>-<number>-<hex>. */
export function newAppToken(appId: string): string {
  return `xapp-1-${appId}-${Date.now()}-${randomBytes(16).toString("hex")}`;
}
