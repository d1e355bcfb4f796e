import { createServer } from "node:net";

/**
 * Ports handed out by this process. The OS may give a port that was just handed out (and closed) to the
 * next caller: two benches in one process (the quick bench runs its sections side by side) then start
 * two servers on one port, and requests reach the wrong one.
 */
const handedOut = new Set<number>();

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it), never the same one twice here. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await bind(0);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error("freePort: the OS kept offering ports this process has already handed out");
}

/**
 * A free port whose partner, `port + offset`, is free too (a Redis Cluster node's bus port is its port +
 * 10000): neither was ever handed out here.
 */
export async function freePortWith(offset: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await freePort();
    const partner = port + offset;
    if (partner > 65_535 || handedOut.has(partner)) continue;
    const free = await bind(partner).then(
      () => true,
      () => false,
    );
    if (!free) continue;
    handedOut.add(partner);
    return port;
  }
  throw new Error(`freePortWith: no free port with a free partner ${offset} above it in 50 tries`);
}

/** Listens on 127.0.0.1:`port` (0: one the OS picks) and closes again: the port it got; rejects when it cannot. */
async function bind(port: number): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("could not read the port the OS assigned"));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}
