import { connect, createServer, type Socket } from "node:net";

export interface TcpHold {
  readonly port: number;
  /**
   * From now on nothing passes, either way: open connections stay open but carry nothing, and new ones
   * are accepted and then hear nothing. What a client sees of a network path that stopped passing packets
   * behind something that still accepts (a TCP load balancer such as HAProxy in `mode tcp`, or a
   * firewall that drops rather than refuses): no error, no close, only silence until its own timeouts.
   */
  hold(): void;
  /** Everything held passes again; connections accepted meanwhile reach the server now. */
  release(): void;
  /**
   * From now on the path is cut: open connections are reset and new ones are accepted and closed at
   * once (what a client sees of a host that rebooted or a link that went down hard), until `mend()`.
   */
  cut(): void;
  mend(): void;
  close(): Promise<void>;
}

/** A loopback TCP relay to `upstreamPort` that can hold every byte (see hold()). */
export async function startTcpHold(upstreamPort: number): Promise<TcpHold> {
  let holding = false;
  let cutting = false;
  const sockets = new Set<Socket>();
  const waiting: (() => void)[] = [];
  const relay = (client: Socket) => {
    const server = connect(upstreamPort, "127.0.0.1");
    for (const [from, to] of [
      [client, server],
      [server, client],
    ] as const) {
      sockets.add(from);
      from.on("data", (chunk) => to.write(chunk));
      from.on("error", () => to.destroy());
      from.on("close", () => {
        sockets.delete(from);
        to.destroy();
      });
    }
    if (holding) {
      client.pause();
      server.pause();
    }
  };
  const listener = createServer((client) => {
    client.on("error", () => undefined);
    if (cutting) {
      client.destroy();
      return;
    }
    if (!holding) return relay(client);
    // accepted, and heard nothing until release
    client.pause();
    sockets.add(client);
    waiting.push(() => {
      sockets.delete(client);
      if (client.destroyed) return;
      relay(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const address = listener.address();
  if (address === null || typeof address === "string") throw new Error("the relay has no port");
  return {
    port: address.port,
    hold() {
      holding = true;
      for (const socket of sockets) socket.pause();
    },
    release() {
      holding = false;
      for (const socket of sockets) socket.resume();
      for (const go of waiting.splice(0)) go();
    },
    cut() {
      cutting = true;
      for (const socket of sockets) socket.destroy();
    },
    mend() {
      cutting = false;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
