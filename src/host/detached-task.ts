import { CodedError } from "../errors.ts";
import { lines, type ShellCommand, sh } from "./shell-quote.ts";
import { type CommandRunner, cutLine, outputLines } from "./transport.ts";

export interface DetachedStatus {
  /** running: alive; exited: finished and wrote its exit status; dead: gone without one; missing: never started. */
  state: "running" | "exited" | "dead" | "missing";
  exitCode: number | undefined;
  logTail: string[];
}

/**
 * Long work on a host (downloads, engine builds) runs detached from the SSH session: `setsid nohup`, its
 * own process group, pid/log/exit status in files of its task directory. It survives a dropped
 * connection and a bot restart; a restarted worker re-attaches by reading the directory.
 *
 * `secrets` are written through standard input to a mode-600 file that the task reads and deletes as it
 * starts, so they never appear on a command line (`ps`) or in the script.
 */
export async function startDetached(
  transport: CommandRunner,
  dir: string,
  script: ShellCommand,
  secrets: Record<string, string> = {},
): Promise<void> {
  const wrapper = sh`#!/usr/bin/env bash
# Written by modelswap: a detached task. Its pid, log and exit status live beside this file.
cd ${dir} || exit 1
echo $$ > pid
if [ -f .secret-env ]; then . ./.secret-env; rm -f .secret-env; fi
( set -euo pipefail
${script}
)
code=$?
echo "$code" > exit.tmp && mv exit.tmp exit
exit "$code"
`;
  const env = lines(Object.entries(secrets).map(([name, value]) => sh`export ${name}=${value}`));
  await must(
    transport,
    sh`mkdir -p ${dir} && rm -f ${dir}/exit ${dir}/pid && cat > ${dir}/run.sh.tmp && mv ${dir}/run.sh.tmp ${dir}/run.sh`,
    wrapper.text,
  );
  if (env.text !== "") await must(transport, sh`umask 077 && cat > ${dir}/.secret-env`, `${env.text}\n`);
  await must(
    transport,
    // The redirections must be on the backgrounded command itself, or a subshell keeps the channel open.
    // The pid is written here, before this returns, so a look right after the start never sees "dead".
    // (setsid does not fork when it is not a group leader, so $! is the task's own pid.)
    sh`cd ${dir} || exit 1; setsid nohup bash ${dir}/run.sh >> ${dir}/log 2>&1 < /dev/null & echo $! > ${dir}/pid`,
  );
}

/** Reads a task's state from its directory; checks the pid is really this task's and not a zombie. */
export async function detachedStatus(
  transport: CommandRunner,
  dir: string,
  logLines = 20,
): Promise<DetachedStatus> {
  const result = await transport.exec(sh`
    if [ ! -d ${dir} ] || [ ! -f ${dir}/run.sh ]; then echo state=missing; exit 0; fi
    pid=$(cat ${dir}/pid 2>/dev/null || true)
    if [ -n "$pid" ] && [ -r /proc/$pid/cmdline ] && tr '\\0' ' ' < /proc/$pid/cmdline | grep -qF ${`${dir}/run.sh`} \
       && [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ]; then alive=1; else alive=0; fi
    # The exit file is read after the liveness check: a task that ends between the two is "exited", not "dead".
    if [ -f ${dir}/exit ]; then echo state=exited; echo "exit=$(cat ${dir}/exit)";
    elif [ "$alive" = 1 ]; then echo state=running; else echo state=dead; fi
    echo ---log---
    tail -c ${LOG_TAIL_BYTES} ${dir}/log 2>/dev/null || true
  `);
  const [head = "", log = ""] = result.stdout.split("---log---\n");
  const state = /state=(\w+)/.exec(head)?.[1] as DetachedStatus["state"] | undefined;
  const exit = /exit=(\d+)/.exec(head)?.[1];
  return {
    state: state ?? "missing",
    exitCode: exit === undefined ? undefined : Number(exit),
    logTail: logLinesOf(log, logLines),
  };
}

/** The most of a task's log read at one look: its last lines are in it, however long the log grew. */
const LOG_TAIL_BYTES = 64 * 1024;

/**
 * A log's last lines as a person saw them (transport.ts `outputLines`: each redraw of a progress bar is a
 * line), each cut at LINE_CHARS: what a failure's reason quotes from the log stays small enough for the
 * swap's record.
 */
function logLinesOf(log: string, count: number): string[] {
  return outputLines(log).slice(-count).map(cutLine);
}

/** How long a task has after TERM before it gets KILL. */
const STOP_GRACE_SECONDS = 5;
/** How long a KILLed task's processes may take to be gone before the stop says it failed. */
const KILL_WAIT_SECONDS = 3;

/**
 * Ends a task and everything it started (its process group); the files stay. TERM, up to `graceSeconds`
 * on the host's clock in milliseconds, then KILL; resolves once none of its processes is left, and
 * throws HOST_COMMAND_FAILED naming those that are. (It counted fifty looks instead: with `ps` slow on a
 * loaded host the loop outlasted the command's time limit, the error was swallowed, KILL was never
 * sent, and a cancelled swap's download went on.)
 */
export async function stopDetached(
  transport: CommandRunner,
  dir: string,
  graceSeconds = STOP_GRACE_SECONDS,
): Promise<void> {
  const result = await transport.exec(
    sh`
    pid=$(cat ${dir}/pid 2>/dev/null || true)
    [ -n "$pid" ] || exit 0
    alive() { ps -o stat= -g "$pid" 2>/dev/null | grep -qv '^Z'; }
    waited() { end=$(( $(date +%s%3N) + $1 )); while alive; do [ "$(date +%s%3N)" -ge "$end" ] && return 1; sleep 0.1; done; }
    kill -TERM -- -"$pid" 2>/dev/null || true
    waited ${graceSeconds * 1000} && exit 0
    kill -KILL -- -"$pid" 2>/dev/null || true
    waited ${KILL_WAIT_SECONDS * 1000} && exit 0
    echo "still running after KILL:"; ps -o pid=,stat=,args= -g "$pid" | grep -v ' Z'
    exit 1
  `,
    { timeoutMs: (graceSeconds + KILL_WAIT_SECONDS + 15) * 1000 },
  );
  if (result.code !== 0)
    throw new CodedError(
      "HOST_COMMAND_FAILED",
      `${transport.hostName}: could not stop the task in ${dir}: ${cutLine(result.stdout.trim().replaceAll("\n", "; ")) || result.stderr.trim()}`,
      `stop it by hand (kill -KILL -- -$(cat ${dir}/pid)); a process in uninterruptible sleep (ps state D) waits on its disk or network`,
    );
}

/** Reads a small file the task wrote (e.g. the engine commit); undefined when absent. */
export async function readTaskFile(transport: CommandRunner, path: string): Promise<string | undefined> {
  const result = await transport.exec(sh`cat ${path} 2>/dev/null`);
  return result.code === 0 ? result.stdout : undefined;
}

async function must(transport: CommandRunner, command: ReturnType<typeof sh>, stdin?: string): Promise<void> {
  const result = await transport.exec(command, stdin === undefined ? {} : { stdin });
  if (result.code !== 0) {
    throw new CodedError(
      "HOST_COMMAND_FAILED",
      `${transport.hostName}: could not start a detached task: ${result.stderr.trim().split("\n")[0] ?? ""}`,
      "check that the bot's user can write the models directory on the host",
    );
  }
}
