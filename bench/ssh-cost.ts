import { pino } from "pino";
import type { HostConfig } from "../src/config/file-schema.ts";
import { createTransport } from "../src/host/create-transport.ts";
import { sh } from "../src/host/shell-quote.ts";
import type { BenchSshd } from "../testbench/sshd.ts";
import { reapedChildrenCpuSeconds } from "./proc-stats.ts";
import { round, sleep } from "./stats.ts";

const settleMs = 300;

/** What one SSH handshake costs against one command on a connection kept open, both ends counted. */
export interface SshCost {
  /** Connect, authenticate, run `true`, close: wall time each (ms). */
  handshake_ms: number;
  /** Its CPU time: the bot's side (this process) plus sshd's (the connection's processes), ms. */
  handshake_cpu_ms: number;
  /** `true` on a connection already open: wall time each (ms). */
  exec_ms: number;
  /** Its CPU time, both sides (ms). */
  exec_cpu_ms: number;
}

/**
 * The decision the monitor rests on, measured: a fresh SSH connection per check, or one kept per host.
 * `rounds` connections are opened, used for one `true` and closed, one after the other; then one
 * connection runs `rounds` `true`s. The client's CPU is this process's (`process.cpuUsage`, the same
 * ssh2 code the bot runs); sshd's is what its listener reaped from the finished connections (cutime +
 * cstime), which holds each connection's privilege-separated children and the commands' shells. The
 * `true` each handshake runs is taken off its figure.
 */
export async function measureSshCost(sshd: BenchSshd, host: HostConfig, rounds: number): Promise<SshCost> {
  const listener = sshd.pid();
  if (listener === undefined) throw new Error("bench: sshd is not running");
  const log = pino({ level: "silent" });
  const sample = () => {
    const cpu = process.cpuUsage();
    return {
      at: performance.now(),
      client: (cpu.user + cpu.system) / 1000,
      server: reapedChildrenCpuSeconds(listener) * 1000,
    };
  };
  const settle = () => sleep(settleMs); // sshd reaps a closed connection's processes
  const command = sh`true`;

  const h0 = sample();
  for (let i = 0; i < rounds; i += 1) {
    const transport = createTransport(host, log);
    await transport.exec(command);
    await transport.close();
  }
  await settle();
  const h1 = sample();

  const kept = createTransport(host, log);
  await kept.exec(command);
  const e0 = sample();
  for (let i = 0; i < rounds; i += 1) await kept.exec(command);
  const e1wall = performance.now();
  await kept.close();
  await settle();
  const e1 = sample();
  // the kept connection's own handshake is in e1's server figure (reaped at close): take one off
  const perHandshakeServer = (h1.server - h0.server) / rounds;
  const exec = {
    ms: (e1wall - e0.at) / rounds,
    cpu: (e1.client - e0.client + Math.max(0, e1.server - e0.server - perHandshakeServer)) / rounds,
  };
  return {
    handshake_ms: round((h1.at - h0.at - settleMs) / rounds - exec.ms, 2),
    handshake_cpu_ms: round((h1.client - h0.client + h1.server - h0.server) / rounds - exec.cpu, 2),
    exec_ms: round(exec.ms, 2),
    exec_cpu_ms: round(exec.cpu, 2),
  };
}
