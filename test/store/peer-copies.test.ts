import type { Redis } from "ioredis";
import { beforeEach, describe, expect, it } from "vitest";
import type { PeerSource } from "../../src/host/peer-copy.ts";
import { keys } from "../../src/store/keys.ts";
import { PeerCopies } from "../../src/store/peer-copies.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * A rollout's copy state on a real redis-server (src/store/peer-copies.ts): a host copies from the least
 * busy host that serves, never past the fan-out, however many ask at once; a worker that comes back gets
 * the claim it held; a host that serves no more is not handed out; the key is made once.
 */
let redis: Redis;
let peers: PeerCopies;
const RO = "ro-mxdq16y0-0b89cc";
const source = (host: string): PeerSource => ({
  host,
  address: "10.0.0.1",
  port: 22,
  user: "modelswap",
  modelDir: `/srv/models/${host}`,
  hostKey: "ssh-ed25519 AAAA",
});

useRedisServer((client) => {
  redis = client;
  peers = new PeerCopies(client);
});
beforeEach(async () => {
  await redis.flushall();
});

describe("a rollout's peer copies in Redis", () => {
  it("hands out no host past its fan-out, even to twenty hosts asking at once", async () => {
    await peers.serve(RO, source("gpu-1"));
    const asking = Array.from({ length: 20 }, (_, i) => `gpu-${i + 2}`);
    const got = await Promise.all(asking.map((h) => peers.claim(RO, h, 2)));
    expect(got.filter((s) => s !== undefined).map((s) => s!.host)).toEqual(["gpu-1", "gpu-1"]);
    expect(await peers.load(RO)).toEqual({ "gpu-1": 2 });
  });

  it("takes the least busy serving host, never the asking one, and frees a slot on release", async () => {
    await peers.serve(RO, source("gpu-1"));
    expect((await peers.claim(RO, "gpu-2", 2))?.host).toBe("gpu-1");
    await peers.serve(RO, source("gpu-2"));
    expect((await peers.claim(RO, "gpu-3", 2))?.host).toBe("gpu-2");
    expect((await peers.claim(RO, "gpu-4", 2))?.host).toBe("gpu-1");
    await peers.serve(RO, source("gpu-5"));
    // gpu-5 serves with nothing to do, but it asks for itself: gpu-1 is full, gpu-2 has one slot
    expect((await peers.claim(RO, "gpu-5", 2))?.host).toBe("gpu-2");
    expect((await peers.claim(RO, "gpu-6", 2))?.host).toBe("gpu-5");
    expect(await peers.load(RO)).toEqual({ "gpu-1": 2, "gpu-2": 2, "gpu-5": 1 });
    await peers.release(RO, "gpu-4");
    expect(await peers.load(RO)).toMatchObject({ "gpu-1": 1, "gpu-2": 2 });
    await peers.release(RO, "gpu-4"); // twice: nothing more
    await peers.release(RO, "gpu-2");
    expect((await peers.load(RO))["gpu-1"]).toBe(0);
  });

  it("gives a host the claim it holds again (a worker that died mid-copy), until it lets go", async () => {
    await peers.serve(RO, source("gpu-1"));
    await peers.serve(RO, source("gpu-2"));
    const first = await peers.claim(RO, "gpu-3", 2);
    await peers.claim(RO, "gpu-4", 2);
    expect((await peers.claim(RO, "gpu-3", 2))?.host).toBe(first?.host);
    expect(Object.values(await peers.load(RO)).reduce((a, b) => a + b, 0)).toBe(2);
  });

  it("stops handing out a host that serves no more; a claim on it is let go and another taken", async () => {
    await peers.serve(RO, source("gpu-1"));
    expect((await peers.claim(RO, "gpu-3", 2))?.host).toBe("gpu-1");
    await peers.unserve(RO, "gpu-1");
    expect(await peers.claim(RO, "gpu-4", 2)).toBeUndefined();
    await peers.serve(RO, source("gpu-2"));
    expect((await peers.claim(RO, "gpu-3", 2))?.host).toBe("gpu-2");
    expect(await peers.load(RO)).toMatchObject({ "gpu-1": 0, "gpu-2": 1 });
  });

  it("makes the rollout's key once, whoever asks first, and lets it expire with the rollout's copies", async () => {
    const [a, b] = await Promise.all([peers.copyKey(RO), peers.copyKey(RO)]);
    expect(a).toEqual(b);
    expect(a.publicKey).toMatch(/^ssh-ed25519 [A-Za-z0-9+/=]+$/);
    expect(a.privateKey).toContain("OPENSSH PRIVATE KEY");
    expect(await redis.ttl(keys.peerKey(RO))).toBeGreaterThan(86_400);
    expect(await peers.copyKey("ro-other-000000")).not.toEqual(a);
  });
});
