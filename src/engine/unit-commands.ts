import { type ShellCommand, sh } from "../host/shell-quote.ts";
import { ENGINE_KINDS, type EngineKind } from "./engine-kind.ts";
import { unitNameFor } from "./render-unit.ts";

/**
 * The commands modelswap runs with privileges (as `sudo -n <command>` on a host with `sudo: true`): the
 * switch's and the rollback's, and nothing else. docs/operations.md ("sudo: exactly the rights it
 * needs") lists them for the sudoers file; `modelswap doctor` asks the host's sudo about each.
 */
export const unitCommands = {
  /** Writes the unit file from standard input (its output goes to /dev/null). */
  writeUnit: (unitDir: string, unit: string): ShellCommand => sh`tee ${`${unitDir}/${unit}`}`,
  daemonReload: (): ShellCommand => sh`systemctl daemon-reload`,
  enableNow: (unit: string): ShellCommand => sh`systemctl enable --now ${unit}`,
  disableNow: (unit: string): ShellCommand => sh`systemctl disable --now ${unit}`,
  /**
   * SIGKILL to every process of a unit (systemctl kill's default --kill-whom=all): a new unit that failed
   * behind the front door's hold, which no client reached, is stopped at once instead of by the engine's
   * graceful drain (SGLang's SIGTERM watchdog polls every 5 s). Only units the bot wrote.
   */
  killNow: (unit: string): ShellCommand => sh`systemctl kill --signal=SIGKILL ${unit}`,
};

/** A unit name of the shape the bot writes (`sglang-<model>-<commit>.service`), for checking rules against. */
export const SAMPLE_BOT_UNIT = unitNameFor("modelswap/doctor-check", "0000000", "sglang");

/** Units of the shapes the bot writes for each engine (`vllm-<model>-<commit>.service` for vLLM). */
export const sampleBotUnit = (kind: EngineKind): string =>
  unitNameFor("modelswap/doctor-check", "0000000", kind);

/**
 * Every privileged command a host's swaps and rollbacks run, with the configured serving unit and a unit
 * of the shape the bot writes: what the sudoers rules must allow.
 */
export function privilegedCommands(host: {
  unitDir: string;
  currentUnit: string;
  /** The engines the host serves with (default SGLang only): a unit of each one's shape is checked. */
  engines?: readonly EngineKind[];
}): PrivilegedCommand[] {
  const kinds = ENGINE_KINDS.filter((k) => (host.engines ?? ["sglang"]).includes(k));
  const botUnits = kinds.map(sampleBotUnit);
  const units = [host.currentUnit, ...botUnits];
  return [
    ...units.map((u) => ({
      what: `tee ${host.unitDir}/${u}`,
      command: unitCommands.writeUnit(host.unitDir, u),
    })),
    { what: "systemctl daemon-reload", command: unitCommands.daemonReload() },
    ...units.flatMap((u) => [
      { what: `systemctl enable --now ${u}`, command: unitCommands.enableNow(u) },
      { what: `systemctl disable --now ${u}`, command: unitCommands.disableNow(u) },
    ]),
    ...botUnits.map((u) => ({
      what: `systemctl kill --signal=SIGKILL ${u}`,
      command: unitCommands.killNow(u),
      without: "a rollback behind the front door stops a failed new unit by its engine's graceful drain",
    })),
  ];
}

/** A command the sudoers rules should allow; `without`: what the bot does instead where they do not. */
export interface PrivilegedCommand {
  what: string;
  command: ShellCommand;
  /** Set for a command the bot can do without (it falls back), saying how: sudo refusing it is a warning. */
  without?: string;
}
