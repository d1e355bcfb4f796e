import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { durationSince, utcTime } from "../format-duration.ts";
import type { GpuInfo } from "../gpu/nvidia-smi.ts";
import { modelName } from "../grammar/model-name.ts";
import {
  alignColumns,
  codeBlock,
  context,
  fields,
  header,
  message,
  type SlackMessage,
  section,
  truncate,
} from "../slack/blocks.ts";
import type { HostStatus, HostVerdict } from "../status/probe-host.ts";

const VERDICT: Record<HostVerdict, { emoji: string; label: string }> = {
  healthy: { emoji: "🟢", label: "healthy" },
  starting: { emoji: "🟡", label: "starting (loading the model)" },
  "not-serving": { emoji: "🔴", label: "not serving" },
  failed: { emoji: "🔴", label: "service failed" },
  unreachable: { emoji: "⚫", label: "unreachable" },
};

/** The detailed `/llm status <host>` answer. */
export function renderHostStatus(status: HostStatus, now = new Date()): SlackMessage {
  const verdict = VERDICT[status.verdict];
  const title = `${verdict.emoji} ${status.host}: ${verdict.label}`;
  const blocks = [header(title)];
  const footer = context(`checked ${utcTime(status.checkedAt)} · took ${status.durationMs} ms`);

  if (status.connection !== undefined) {
    blocks.push(
      section(`*${escapeMrkdwn(status.connection.message)}*\n_Fix:_ ${escapeMrkdwn(status.connection.fix)}`),
      context(`error \`${status.connection.code}\``),
      footer,
    );
    return message(`${title}: ${status.connection.message}`, blocks);
  }

  const model = servedModel(status);
  blocks.push(
    fields([
      ["Model", model === undefined ? "_none answering_" : `\`${escapeMrkdwn(model)}\``],
      ["Service", unitLine(status, now)],
      ["Server", serverLine(status)],
      ["GPUs", gpuSummary(status.gpus, status.gpuProblem?.message)],
    ]),
  );
  if (status.gpus.length > 0) blocks.push(section(codeBlock(gpuTable(status.gpus))));
  if (status.gpuProblem !== undefined) {
    blocks.push(
      section(`⚠️ ${escapeMrkdwn(status.gpuProblem.message)}\n_Fix:_ ${escapeMrkdwn(status.gpuProblem.fix)}`),
    );
  }
  if (status.journalTail.length > 0) {
    blocks.push(
      section(`*Last log lines of \`${status.unitName}\`*`),
      section(codeBlock(status.journalTail)),
    );
  }
  blocks.push(footer);
  const text = `${title}. Model ${model ?? "none"}; service ${status.unit?.activeState ?? "unknown"}; ${gpuSummary(status.gpus, status.gpuProblem?.message)}`;
  return message(text, blocks);
}

/** The model the server says it serves, by the name people read (modelName: a path's meaningful end). */
export function servedModel(status: HostStatus): string | undefined {
  const served = status.server?.models[0];
  return served === undefined ? undefined : modelName(served);
}

function unitLine(status: HostStatus, now: Date): string {
  const unit = status.unit;
  if (unit === undefined) return `\`${status.unitName}\`: unknown`;
  if (unit.loadState === "not-found") return `\`${unit.name}\`: *not installed*`;
  // "failed (failed)" says nothing twice: the sub-state only when it adds something ("active (running)")
  const state = `${unit.activeState}${unit.subState && unit.subState !== unit.activeState ? ` (${unit.subState})` : ""}`;
  const since =
    unit.activeState === "active" && unit.activeSince !== undefined
      ? `, up ${durationSince(unit.activeSince, now)}`
      : "";
  const enabled = unit.unitFileState === "enabled" ? "" : `, ${unit.unitFileState || "not enabled"} ⚠️`;
  const restarts = unit.restarts > 0 ? `, ${unit.restarts} restart(s)` : "";
  return `\`${unit.name}\`: ${state}${since}${enabled}${restarts}`;
}

function serverLine(status: HostStatus): string {
  const server = status.server;
  if (server === undefined) return "unknown";
  if (server.healthStatus === 200) return `:${status.port} ${status.healthLabel} OK`;
  if (server.healthStatus === null)
    return `:${status.port} ${escapeMrkdwn(server.healthError ?? "no answer")}`;
  return `:${status.port} ${status.healthLabel} answered HTTP ${server.healthStatus}`;
}

export function gpuSummary(gpus: readonly GpuInfo[], problem: string | undefined): string {
  if (gpus.length === 0) return problem === undefined ? "none found" : "unavailable";
  const names = new Set(gpus.map((g) => g.name));
  const used = gpus.reduce((sum, g) => sum + g.memoryUsedMiB, 0);
  const total = gpus.reduce((sum, g) => sum + g.memoryTotalMiB, 0);
  const busy = gpus.filter((g) => (g.utilizationPct ?? 0) > 5).length;
  const first = gpus[0]!;
  const cc = `${first.computeCapability.major}.${first.computeCapability.minor}`;
  return `${gpus.length}× ${[...names].join(" + ")} (sm ${cc}) · ${busy}/${gpus.length} busy · ${gib(used)}/${gib(total)} GiB`;
}

export function gpuTable(gpus: readonly GpuInfo[]): string[] {
  const rows = gpus.map((g) => [
    String(g.index),
    truncate(g.name.replace(/^NVIDIA /, ""), 28),
    `${gib(g.memoryUsedMiB)}/${gib(g.memoryTotalMiB)} GiB`,
    g.utilizationPct === null ? "n/a" : `${g.utilizationPct}%`,
    g.temperatureC === null ? "n/a" : `${g.temperatureC}°C`,
    g.powerDrawW === null ? "n/a" : `${Math.round(g.powerDrawW)} W`,
  ]);
  return alignColumns([["GPU", "Name", "Memory", "Util", "Temp", "Power"], ...rows]);
}

function gib(mib: number): string {
  return (mib / 1024).toFixed(mib >= 10 * 1024 ? 0 : 1);
}
