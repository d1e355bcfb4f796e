import { MetricsTime } from "bullmq";

/**
 * BullMQ counts a queue's completed and failed jobs only when its workers collect metrics: every worker
 * does, so `bullmq_job_completed_total` and `bullmq_job_failed_total` on /metrics are real counts. An
 * hour of per-minute points is kept beside the totals (the totals are what /metrics exports).
 */
export const WORKER_METRICS = { maxDataPoints: MetricsTime.ONE_HOUR };
