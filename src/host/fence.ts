import { CodedError } from "../errors.ts";
import { duration } from "../format-duration.ts";
import { type ShellCommand, sh } from "./shell-quote.ts";
import type { ExecOptions, ExecResult, HostTransport } from "./transport.ts";

/*
 * Fencing (Kleppmann, "How to do distributed locking", 2016; Chubby's sequencers): a run of a swap holds
 * a lease in Redis, and with it a number that only grows. Every command of the run that changes the host
 * (unit files, systemctl, the front door's state, detached tasks, deletes) runs on the host under one
 * `flock`, in the same shell command as a compare of that number against the largest one the host has
 * seen: a smaller one is refused there, on the host, before the command runs. A worker that lost its
 * lease while it was paused (SIGSTOP, a long GC, a lost Redis) may still reach the host, but it can no
 * longer change it once the run that took over has: checking the lease in the bot is not enough, since a
 * pause can fall between the check and the command.
 */

/** Where a host keeps its fence: beside the swaps' tasks, in a directory the bot's user owns. */
export function fenceDir(modelsDir: string): string {
  return `${modelsDir.replace(/\/+$/, "")}/.modelswap`;
}

/** The number a run of a swap carries, and what to do when a host has seen a larger one. */
export interface FenceToken {
  /** The run's number now (it may grow once, by `catchUp`). */
  readonly number: number;
  /**
   * The host has seen `seen`, larger than this run's number. If this run still holds its lease, Redis's
   * counter had fallen behind the host's (Redis lost data): the number becomes one above `seen`, and this
   * is true. If it does not, false: another run has changed the host, and the host was right.
   */
  catchUp(seen: number): Promise<boolean>;
}

/** What a fenced command prints on standard error when the fence, not the command, refused. */
const MARK = "modelswap-fence:";
/** Its exit status (EX_TEMPFAIL): told apart from the command's own by the mark. */
const REFUSED = 75;

/**
 * `command` under the host's fence: the lock (waiting at most `waitSeconds` for another fenced command),
 * the compare of `number` with the number the host saw last, the new number written when it is larger,
 * then the command, all while the lock is held. The command and what it starts do not inherit the lock's
 * descriptor (a detached task would hold it for hours).
 */
export function fenced(
  command: ShellCommand,
  dir: string,
  number: number,
  waitSeconds: number,
): ShellCommand {
  if (!Number.isSafeInteger(number) || number < 0) throw new Error(`a fence number, not ${number}`);
  const file = `${dir}/fence`;
  return sh`command -v flock >/dev/null 2>&1 || { echo ${`${MARK} no-flock`} >&2; exit ${REFUSED}; }
mkdir -p -- ${dir} || exit 1
{
  flock -w ${Math.max(1, Math.floor(waitSeconds))} 9 || { echo ${`${MARK} busy`} >&2; exit ${REFUSED}; }
  seen=0
  if [ -s ${file} ]; then seen=$(cat -- ${file}); fi
  case $seen in ''|*[!0-9]*) echo ${`${MARK} unreadable`} >&2; exit ${REFUSED};; esac
  if [ "$seen" -gt ${number} ]; then echo "${{ text: MARK }} stale $seen" >&2; exit ${REFUSED}; fi
  if [ "$seen" -lt ${number} ]; then echo ${number} > ${`${file}.new`} && mv -f -- ${`${file}.new`} ${file} || exit 1; fi
  {
${command}
  } 9>&-
} 9>>${`${file}.lock`}`;
}

/** Why the fence refused a command, from its result; undefined when the command itself ran. */
export type FenceRefusal =
  | { kind: "stale"; seen: number }
  | { kind: "busy" }
  | { kind: "unreadable" }
  | { kind: "no-flock" };

export function fenceRefusal(result: ExecResult): FenceRefusal | undefined {
  if (result.code !== REFUSED) return undefined;
  const line = result.stderr.split("\n").find((l) => l.startsWith(MARK));
  if (line === undefined) return undefined;
  const [kind = "", seen = ""] = line.slice(MARK.length).trim().split(/\s+/);
  if (kind === "stale" && /^\d+$/.test(seen)) return { kind, seen: Number(seen) };
  if (kind === "busy" || kind === "unreadable" || kind === "no-flock") return { kind };
  return undefined;
}

/** What a host needs to fence a run's commands: where its fence is, and the run's token. */
export interface HostFence {
  readonly dir: string;
  readonly token: FenceToken;
}

/**
 * Runs `command` under the fence. A refusal for a stale number is met once with `catchUp` (a new number
 * only while this run still holds its lease); then the fence's refusals are coded errors:
 * FENCE_STALE (another run changed the host since), HOST_COMMAND_TIMEOUT (the fence stayed locked: the
 * step is tried again later, as for a slow host), FENCE_UNAVAILABLE (no flock, or a fence file that is
 * not a number).
 */
export async function fencedExec(
  transport: Pick<HostTransport, "hostName" | "exec">,
  fence: HostFence,
  command: ShellCommand,
  options: ExecOptions & { timeoutMs: number },
): Promise<ExecResult> {
  // the lock's wait fits inside the command's own limit, so a busy fence is told apart from a hung command
  const waitSeconds = Math.max(1, Math.min(60, options.timeoutMs / 1000 / 2));
  for (let attempt = 1; ; attempt++) {
    const number = fence.token.number;
    const result = await transport.exec(fenced(command, fence.dir, number, waitSeconds), options);
    const refusal = fenceRefusal(result);
    if (refusal === undefined) return result;
    if (refusal.kind === "stale" && attempt === 1 && (await fence.token.catchUp(refusal.seen))) continue;
    throw fenceError(transport.hostName, fence.dir, refusal, number, waitSeconds);
  }
}

function fenceError(
  host: string,
  dir: string,
  refusal: FenceRefusal,
  number: number,
  waitSeconds: number,
): CodedError {
  switch (refusal.kind) {
    case "stale":
      return new CodedError(
        "FENCE_STALE",
        `${host} refused a command of this run of the swap: its fence has seen run ${refusal.seen}, later than this one (${number}), which no longer holds the swap`,
        "nothing to do: a later run of the swap (or a later swap) has changed the host, and this one stops",
      );
    case "busy":
      return new CodedError(
        "HOST_COMMAND_TIMEOUT",
        `another modelswap command held ${host}'s fence (${dir}/fence.lock) for ${duration(waitSeconds)}`,
        "the step is tried again; if it stays so, look on the host for a hung command holding that lock (fuser -v the lock file)",
      );
    case "unreadable":
      return new CodedError(
        "FENCE_UNAVAILABLE",
        `${host}'s fence file ${dir}/fence does not hold a number`,
        `remove ${dir}/fence on the host once no swap of it runs; modelswap writes it again`,
      );
    case "no-flock":
      return new CodedError(
        "FENCE_UNAVAILABLE",
        `${host} has no flock, which fences modelswap's commands there`,
        "install util-linux on the host (apt-get install util-linux)",
      );
  }
}

/**
 * A transport whose every command runs under the fence: what a swap's front door and detached tasks are
 * given, so that none of their changes escapes it (their reads take the lock for a moment, which costs
 * nothing and keeps a late run from even reading on).
 */
export function fencedTransport(
  transport: Pick<HostTransport, "hostName" | "exec">,
  fence: HostFence,
  defaultTimeoutMs: number,
): Pick<HostTransport, "hostName" | "exec"> {
  return {
    hostName: transport.hostName,
    exec: (command, options = {}) =>
      fencedExec(transport, fence, command, { ...options, timeoutMs: options.timeoutMs ?? defaultTimeoutMs }),
  };
}
