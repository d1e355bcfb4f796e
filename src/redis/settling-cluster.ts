import type { Cluster } from "ioredis";

/**
 * Makes an ioredis Cluster's `connect()` always settle: it resolves when the cluster becomes ready and
 * rejects when the client ends, even when that happens after ioredis's own connect forgot its caller.
 * Its duplicates (BullMQ gives each worker one for its blocking commands) get the same.
 *
 * Why: ioredis's Cluster.connect() asks the cluster for its state once it has the slots (its ready
 * check, `CLUSTER INFO`). When the node asked says cluster_state:fail, or is the dead one, it disconnects
 * to try again and never settles the promise it returned (ioredis 5 and 6, built/cluster/index.js,
 * connect(): the refresh listener's failed ready check). Between a master's death and its replica's
 * promotion every connect() meets exactly that. BullMQ awaits that promise when it resets a worker's
 * blocking connection (its watchdog fires when a BZPOPMIN outlives its timeout, as one does across a
 * failover: RedisConnection.reconnect), so that worker stopped taking jobs for good while its client,
 * reconnected by ioredis's retry, said "ready". The failover test's reporter did exactly that, about one
 * run in three, and nothing was logged (test/e2e/redis-cluster-reconnect.test.ts).
 */
export function settlingConnect<C extends Cluster>(cluster: C): C {
  const connect = cluster.connect.bind(cluster);
  cluster.connect = () =>
    new Promise<void>((resolve, reject) => {
      const done = () => {
        cluster.off("ready", onReady);
        cluster.off("end", onEnd);
      };
      const onReady = () => {
        done();
        resolve();
      };
      const onEnd = () => {
        done();
        reject(new Error("Connection is closed."));
      };
      cluster.on("ready", onReady);
      cluster.on("end", onEnd);
      connect().then(onReady, (error: unknown) => {
        done();
        reject(error);
      });
    });
  const duplicate = cluster.duplicate.bind(cluster);
  cluster.duplicate = ((...args: Parameters<typeof duplicate>) =>
    settlingConnect(duplicate(...args))) as typeof cluster.duplicate;
  return cluster;
}
