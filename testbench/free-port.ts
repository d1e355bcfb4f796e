import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * Ports handed out by this process. The OS may give a port that was just handed out (and closed) to the
 * next caller: two benches in one process (the quick bench runs its sections side by side) then start
 * two servers on one port, and requests reach the wrong one.
 */
const handedOut = new Set<number>();

/**
 * Where handed-out ports come from: below the kernel's ephemeral range, one block per vitest worker
 * (VITEST_POOL_ID; 0 outside vitest). A port handed out here is often idle for a while with something
 * counting on it (a unit's port while the unit restarts, a front-door slot with no unit yet): a port the
 * OS picked from the ephemeral range could meanwhile go to any listener on port 0 or any outgoing
 * connection, in this process or a test file running beside it. CI once saw a front door's clients get
 * 404 "not found" from another file's simulated Slack, which had been given the idle slot's port.
 */
const BLOCK = 1_500;
const LOWEST = 10_000;

function ephemeralStart(): number {
  try {
    const [first] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/);
    return Number(first);
  } catch {
    return 32_768; // Linux's default range starts there (net.ipv4.ip_local_port_range)
  }
}

/** This process's block of ports [first, last], or undefined when the range leaves no room for one. */
function ownBlock(): { first: number; last: number } | undefined {
  const blocks = Math.floor((ephemeralStart() - LOWEST) / BLOCK);
  if (blocks < 1) return undefined;
  const first = LOWEST + (Number(process.env.VITEST_POOL_ID ?? 0) % blocks) * BLOCK;
  return { first, last: first + BLOCK - 1 };
}
const block = ownBlock();
let next = block === undefined ? 0 : block.first + Math.floor(Math.random() * BLOCK);

/** A TCP port on 127.0.0.1 that was free a moment ago, from this process's block, never the same one twice here. */
export async function freePort(): Promise<number> {
  if (block === undefined) return await ephemeralPort();
  for (let tried = 0; tried < BLOCK; tried++) {
    const port = next;
    next = next >= block.last ? block.first : next + 1;
    if (handedOut.has(port) || !(await canBind(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`freePort: every port of ${block.first}–${block.last} is taken or was handed out here`);
}

/** A port the OS picks (its ephemeral range), where no block fits below that range. */
async function ephemeralPort(): Promise<number> {
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
    if (partner > 65_535 || handedOut.has(partner) || !(await canBind(partner))) continue;
    handedOut.add(partner);
    return port;
  }
  throw new Error(`freePortWith: no free port with a free partner ${offset} above it in 50 tries`);
}

/** Whether something could listen on 127.0.0.1:`port` a moment ago. */
async function canBind(port: number): Promise<boolean> {
  return await bind(port).then(
    () => true,
    () => false,
  );
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
