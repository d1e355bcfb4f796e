import { failoverSuite } from "../support/failover-suite.ts";

/**
 * Redis Cluster (three masters, a replica each, redis-cli --cluster create) fails over in the
 * middle of a swap's switch: test/support/failover-suite.ts.
 */
failoverSuite("cluster");
