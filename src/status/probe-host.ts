import type { Engine } from "../engine/engine.ts";
import { asCodedError, type CodedError, type ErrorCode } from "../errors.ts";
import { type GpuInfo, readGpus } from "../gpu/nvidia-smi.ts";
import { sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import { parseUnitShow, type UnitInfo, unitShowCommand } from "./systemd-show.ts";

export type HostVerdict = "healthy" | "starting" | "not-serving" | "failed" | "unreachable";

export interface ProbeProblem {
  code: ErrorCode;
  message: string;
  fix: string;
}

export interface ServerProbe {
  /** HTTP status of the engine's health probe (SGLang's /health_generate), or null when nothing answered. */
  healthStatus: number | null;
  healthError: string | undefined;
  /** Served model ids from /v1/models. */
  models: string[];
  /** The model's path on the host, from /v1/models `root` when the engine reports it. */
  modelRoots: string[];
}

export interface HostStatus {
  host: string;
  unitName: string;
  port: number;
  /** What the engine's health probe asks, for people (Engine.healthLabel). */
  healthLabel: string;
  checkedAt: Date;
  durationMs: number;
  verdict: HostVerdict;
  /** Set when the host itself could not be reached (connection, host key, auth). */
  connection: ProbeProblem | undefined;
  unit: UnitInfo | undefined;
  gpus: GpuInfo[];
  gpuProblem: ProbeProblem | undefined;
  server: ServerProbe | undefined;
  /** Last journal lines of the unit, read when it is not healthy. */
  journalTail: string[];
}

export interface ProbeTarget {
  name: string;
  unit: string;
  port: number;
  engine: Pick<Engine, "healthProbe" | "healthFailure" | "healthLabel">;
}

const CONNECTION_CODES: ReadonlySet<ErrorCode> = new Set([
  "HOST_UNREACHABLE",
  "HOST_KEY_MISMATCH",
  "HOST_AUTH_FAILED",
  "HOST_CONNECTION_LOST",
]);

/**
 * Reads what `/llm status` shows for one host: the serving unit (systemctl show), the GPUs
 * (nvidia-smi), and the engine's health probe (as the monitor asks it) and /v1/models (curl on the host, since the port is usually
 * bound to localhost). Never throws: every failure becomes part of the status.
 */
export async function probeHost(
  transport: HostTransport,
  target: ProbeTarget,
  timeoutMs: number,
): Promise<HostStatus> {
  const started = Date.now();
  const status = healthyStatus(target, new Date(started));
  const [unit, gpus, server] = await Promise.allSettled([
    readUnit(transport, target.unit, timeoutMs),
    readGpus(transport, { timeoutMs }),
    readServer(transport, target, timeoutMs),
  ]);

  const connectionFailure = [unit, gpus, server]
    .filter((r): r is PromiseRejectedResult => r.status === "rejected")
    .map((r) => asCodedError(r.reason))
    .find((e) => CONNECTION_CODES.has(e.code));
  if (connectionFailure !== undefined) {
    status.connection = toProblem(connectionFailure);
    status.verdict = "unreachable";
    status.durationMs = Date.now() - started;
    return status;
  }

  if (unit.status === "fulfilled") status.unit = unit.value;
  if (gpus.status === "fulfilled") status.gpus = gpus.value;
  else status.gpuProblem = toProblem(asCodedError(gpus.reason));
  if (server.status === "fulfilled") status.server = server.value;

  status.verdict = verdictOf(status);
  if (status.verdict !== "healthy") status.journalTail = await readJournal(transport, target.unit, timeoutMs);
  status.durationMs = Date.now() - started;
  return status;
}

/**
 * A healthy status of `target` as of `checkedAt`, with nothing read yet: where a probe starts, and what
 * a fleet summary shows for a host the health monitor has just seen healthy.
 */
export function healthyStatus(target: ProbeTarget, checkedAt: Date): HostStatus {
  return {
    host: target.name,
    unitName: target.unit,
    port: target.port,
    healthLabel: target.engine.healthLabel,
    checkedAt,
    durationMs: 0,
    verdict: "healthy",
    connection: undefined,
    unit: undefined,
    gpus: [],
    gpuProblem: undefined,
    server: undefined,
    journalTail: [],
  };
}

function verdictOf(status: HostStatus): HostVerdict {
  const active = status.unit?.activeState;
  if (active === "failed") return "failed";
  const healthy = status.server?.healthStatus === 200;
  if (healthy) return "healthy";
  if (active === "activating" || (active === "active" && startedRecently(status.unit))) return "starting";
  return "not-serving";
}

/** A unit that became active in the last few minutes is probably still loading its model. */
function startedRecently(unit: UnitInfo | undefined): boolean {
  if (unit?.activeSince === undefined) return false;
  return Date.now() - unit.activeSince.getTime() < 120_000;
}

async function readUnit(transport: HostTransport, unit: string, timeoutMs: number): Promise<UnitInfo> {
  const result = await transport.exec(unitShowCommand(unit), { timeoutMs });
  return parseUnitShow(unit, result.stdout);
}

const HTTP_MARK = "\n__modelswap_http_status__=";

async function readServer(
  transport: HostTransport,
  { port, engine }: ProbeTarget,
  timeoutMs: number,
): Promise<ServerProbe> {
  const seconds = Math.max(1, Math.floor(timeoutMs / 1000) - 1);
  const [health, models] = await Promise.all([
    transport.exec(engine.healthProbe(port, seconds), { timeoutMs, maxOutputBytes: 64 * 1024 }),
    transport.exec(
      sh`curl -sS --max-time ${seconds} -w ${`${HTTP_MARK}%{http_code}`} ${`http://127.0.0.1:${port}/v1/models`}`,
      { timeoutMs, maxOutputBytes: 256 * 1024 },
    ),
  ]);
  const healthStatus = Number(health.stdout.trim()) || null;
  const probe: ServerProbe = {
    healthStatus,
    healthError: healthStatus === null ? engine.healthFailure(null, health.code, seconds) : undefined,
    models: [],
    modelRoots: [],
  };
  const modelsAnswer = splitHttp(models.stdout);
  if (modelsAnswer.status === 200) {
    try {
      const parsed = JSON.parse(modelsAnswer.body) as { data?: { id?: unknown; root?: unknown }[] };
      for (const entry of parsed.data ?? []) {
        if (typeof entry.id === "string") probe.models.push(entry.id);
        if (typeof entry.root === "string") probe.modelRoots.push(entry.root);
      }
    } catch {
      // a server that answers garbage to /v1/models simply lists no models
    }
  }
  return probe;
}

function splitHttp(stdout: string): { status: number | null; body: string } {
  const at = stdout.lastIndexOf(HTTP_MARK);
  if (at < 0) return { status: null, body: stdout };
  const status = Number(stdout.slice(at + HTTP_MARK.length).trim());
  return { status: status > 0 ? status : null, body: stdout.slice(0, at) };
}

async function readJournal(transport: HostTransport, unit: string, timeoutMs: number): Promise<string[]> {
  try {
    const result = await transport.exec(sh`journalctl -u ${unit} -n 120 --no-pager -o cat`, {
      timeoutMs,
      maxOutputBytes: 256 * 1024,
    });
    const lines = result.stdout
      .split("\n")
      .filter((line) => line.trim() !== "" && line !== "-- No entries --");
    return interestingTail(lines);
  } catch {
    return [];
  }
}

/**
 * The lines an operator needs: from the last Python traceback on (the crash that matters, even when
 * systemd's restart messages follow it), else the last 15 lines.
 */
export function interestingTail(lines: readonly string[], max = 40): string[] {
  // SGLang's worker processes write a crash behind their log prefix ("[… TP3] Scheduler hit an exception: Traceback …")
  const traceback = lines.findLastIndex((line) => line.includes("Traceback (most recent call last)"));
  if (traceback >= 0) return lines.slice(traceback, traceback + max);
  return lines.slice(-15);
}

function toProblem(error: CodedError): ProbeProblem {
  return { code: error.code, message: error.message, fix: error.fix };
}
