import { failoverSuite } from "../support/failover-suite.ts";

/**
 * Redis behind Sentinel (a primary, its replica, one sentinel) fails over in the
 * middle of a swap's switch: test/support/failover-suite.ts.
 */
failoverSuite("sentinel");
