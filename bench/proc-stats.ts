import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on Linux, asked once). */
const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

export interface ProcSample {
  /** CPU time the process has used so far (user + system), in seconds. */
  cpuSeconds: number;
  /** Resident memory now, in bytes. */
  rssBytes: number;
}

/**
 * CPU time and resident memory of a live process, from /proc/<pid>/stat (utime and stime, fields 14 and
 * 15) and /proc/<pid>/status (VmRSS). Its children are not counted: the bot's own cost is what we want.
 */
export function sampleProcess(pid: number): ProcSample {
  const fields = statFields(pid);
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rssKiB = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
  return { cpuSeconds: (utime + stime) / TICKS_PER_SECOND, rssBytes: rssKiB * 1024 };
}

/**
 * CPU time (user + system, seconds) of the children a live process has reaped (cutime and cstime, fields
 * 16 and 17 of /proc/<pid>/stat): for sshd's listener, what its finished connections cost.
 */
export function reapedChildrenCpuSeconds(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}

/** CPU seconds the whole machine has been busy (all cores: user, nice, system, irq, softirq; /proc/stat). */
export function machineBusySeconds(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = fields;
  return (user + nice + system + irq + softirq) / TICKS_PER_SECOND;
}

/** The fields of /proc/<pid>/stat after the command name, from field 3 (state) on. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // the command name (field 2) is in parentheses and may hold spaces: count fields after its ')'
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}
