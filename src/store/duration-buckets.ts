/**
 * The bucket bounds of modelswap's duration histograms, from a second to two hours: stage durations (an
 * approval may wait an hour) and downtimes alike. The swap tally counts per bound in Redis, so a bound
 * changed here moves old counts into the next bound up (see bucketCounts in stored-histogram.ts), never loses them.
 */
export const DURATION_BUCKETS: readonly number[] = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];
