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
    const port = await osPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error("freePort: the OS kept offering ports this process has already handed out");
}

async function osPort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
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
