import type { HostConfig } from "../config/file-schema.ts";
import { type HostEngine, hostEngineKind } from "../config/host-engines.ts";
import { lsRemoteCommand, parseLsRemote } from "../engine/engine-source.ts";
import { sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import { hubCliCheck, venvCheck } from "../plan/host-checks.ts";
import { readHubCli, readVenvPython } from "../plan/read-host-facts.ts";
import { pass, problem } from "./doctor-row.ts";
import { type Check, lastLine } from "./host-check.ts";

/*
 * The doctor's rows of what a swap builds and downloads with: `hf --version`, each engine's venv python and
 * its upstream (`git ls-remote`, as the preflight asks it).
 */

/** docs/operations.md, "What a host needs": the `hf` command of huggingface_hub 1.x. */
export const MIN_HF_MAJOR = 1;

export function hfRow(transport: HostTransport, target: string): Check {
  return {
    check: "hf",
    run: async () => {
      const cli = await readHubCli(transport);
      const check = hubCliCheck({ hubCli: cli });
      if (!check.ok) return problem("fail", target, "hf", check.detail, "HOST_HF_MISSING", check.fix ?? "");
      const result = await transport.exec(sh`hf --version 2>&1`);
      const version = /(\d+)\.(\d+)\.(\d+)/.exec(result.stdout);
      if (result.code !== 0 || version === null) {
        return problem(
          "fail",
          target,
          "hf",
          `hf --version failed (exit ${result.code}): ${lastLine(result.stdout)}`,
          "HOST_HF_MISSING",
          check.fix ?? "",
        );
      }
      if (Number(version[1]) < MIN_HF_MAJOR) {
        return problem(
          "fail",
          target,
          "hf",
          `hf ${version[0]}: modelswap needs huggingface_hub ${MIN_HF_MAJOR}.x or newer`,
          "HOST_HF_TOO_OLD",
          "pip install -U huggingface_hub where hf comes from (its own venv, e.g. /opt/hf/bin/pip), see docs/operations.md",
        );
      }
      return pass(target, "hf", `hf ${version[0]}`);
    },
  };
}

/** The row's name: "venv" for the host's engine, "venv (vllm)" for another it has. */
const rowOf = (what: string, engine: HostEngine, other: boolean): string =>
  other ? `${what} (${engine.kind})` : what;

export function venvRow(transport: HostTransport, engine: HostEngine, target: string, other: boolean): Check {
  const row = rowOf("venv", engine, other);
  return {
    check: row,
    run: async () => {
      const python = await readVenvPython(transport, engine.venv);
      const check = venvCheck({ venvOk: python.ok }, engine.venv);
      if (!check.ok) {
        const said = python.said === "" ? "" : `: ${python.said}`;
        return problem("fail", target, row, `${check.detail}${said}`, "HOST_VENV_BROKEN", check.fix ?? "");
      }
      return pass(target, row, `${engine.venv}/bin/python runs: ${python.version}`);
    },
  };
}

export function upstreamRow(
  transport: HostTransport,
  host: HostConfig,
  engine: HostEngine,
  target: string,
  timeoutMs: number,
  other: boolean,
): Check {
  const row = rowOf("engine upstream", engine, other);
  return {
    check: row,
    run: async () => {
      const { upstream } = engine;
      const result = await transport.exec(lsRemoteCommand(upstream, "main"), { timeoutMs });
      if (result.code !== 0) {
        return problem(
          "fail",
          target,
          row,
          `git ls-remote ${upstream} failed on the host (exit ${result.code}): ${gitError(result.stderr || result.stdout)}`,
          "ENGINE_UPSTREAM_UNREACHABLE",
          `check hosts[${host.name}].${engine.kind === hostEngineKind(host) ? "engineUpstream" : `engines.${engine.kind}.upstream`} and that the host reaches it (run git ls-remote there): every swap fetches its engine from it`,
        );
      }
      const refs = parseLsRemote(result.stdout);
      const main = refs.get("refs/heads/main");
      return pass(
        target,
        row,
        `${upstream}: ${refs.size} branches and tags${main === undefined ? "" : `, main at ${main.slice(0, 7)}`}`,
      );
    },
  };
}

/** git's own reason (its first `fatal:` or `error:` line; the lines after it are advice). */
function gitError(text: string): string {
  return (
    text
      .split("\n")
      .find((l) => /^(fatal|error):/.test(l.trim()))
      ?.trim() ?? lastLine(text)
  );
}
