import { type ShellCommand, sh } from "../host/shell-quote.ts";
import type { BenchEngine } from "./bench-serving.ts";
import type { EngineKind } from "./engine-kind.ts";
import type { EngineSetup } from "./engine-setup.ts";
import type { FatalLine } from "./fatal-lines.ts";
import type { SanityEngine } from "./sanity.ts";
import type { StartupPhases } from "./startup-phases.ts";

export { ENGINE_KINDS, ENGINE_NAMES, type EngineKind } from "./engine-kind.ts";

/**
 * What modelswap asks of a serving engine at run time, whichever it is: whether it serves (a request
 * that succeeds only once a generation came back, never a mere live process), one sanity prompt and the
 * judgement of its answer, a benchmark run and its summary, and which journal lines mean it will not come
 * up. The swap's stages, the health monitor and `/llm status` reach an engine only through this; each
 * engine's knowledge (paths, request bodies, module names, log lines) stays behind it
 * (src/engine/engines.ts: SGLang's in sglang/, vLLM's in vllm/). The plan's half (recipes, flags,
 * memory, the unit, the build: EngineSetup) likewise (sglang/sglang-setup.ts, vllm/vllm-setup.ts).
 */
export interface Engine extends SanityEngine, BenchEngine, EngineSetup {
  readonly kind: EngineKind;
  /** For people: "SGLang". */
  readonly name: string;
  /** What the health probe asks, for people: "/health_generate". */
  readonly healthLabel: string;
  /**
   * A command that prints the HTTP status of the engine's generating health request on `port` of the
   * host's loopback (`000` when nothing answered), and exits with curl's exit code for what happened
   * (asked by bash itself when it can, http-status.ts: the monitor runs it on every host every interval).
   */
  healthProbe(port: number, timeoutSeconds: number): ShellCommand;
  /** The failing health answer, for people, from the HTTP status or curl's exit code. */
  healthFailure(status: number | null, curlExit: number | null, timeoutSeconds: number): string;
  /**
   * Where the server says which weights it serves (SGLang's /get_model_info, vLLM's /v1/models), and the
   * model path read from that answer's body (what it was started with).
   */
  readonly modelInfoPath: string;
  servedModelPath(body: string): unknown;
  /** The first journal line that means the server will not come up (a traceback, OOM, NaN sampling). */
  findFatalLine(journal: readonly string[]): FatalLine | undefined;
  /** Where the server's start went, from its own timing lines in the journal (weights, compile, graphs). */
  startupPhases(journal: readonly string[]): StartupPhases;
  // sanityRequest and judgeSanity (SanityEngine): one sanity prompt's request and its judgement;
  // benchCommand and parseBenchSummary (BenchEngine): the benchmark client and its summary
  /**
   * A `pkill -f` pattern for a benchmark run against `port` (one a dead worker left running), written so
   * it does not match the shell that runs pkill.
   */
  benchProcessPattern(port: number): string;
}

/**
 * curl of one URL, printing only the HTTP status and exiting with curl's own code: what every engine's
 * health probe comes down to (`body`: sent as the POST body).
 */
export function curlStatus(url: string, timeoutSeconds: number, body?: string): ShellCommand {
  return body === undefined
    ? sh`curl -sS -o /dev/null --max-time ${timeoutSeconds} -w ${"%{http_code}\\n"} ${url}`
    : sh`curl -sS -o /dev/null --max-time ${timeoutSeconds} -H ${"Content-Type: application/json"} --data-binary ${body} -w ${"%{http_code}\\n"} ${url}`;
}

/** Beside a command's health probes: the quick reads around them (systemctl, journalctl) and the SSH round trip. */
const PROBE_COMMAND_MARGIN_SECONDS = 10;

/**
 * The time limit of a host command that runs `probes` health probes of up to `probeSeconds` each: a probe
 * that takes its whole time (a unit that does not answer, a front door holding the request) is a finding,
 * never a host that seems away, which the host's commandTimeoutSeconds (30 s by default) would make it.
 */
export function probeCommandMs(probeSeconds: number, probes = 1): number {
  return (probes * probeSeconds + PROBE_COMMAND_MARGIN_SECONDS) * 1000;
}
