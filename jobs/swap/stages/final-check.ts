import { isoNow } from "../../../src/clock.ts";
import { type Engine, probeCommandMs } from "../../../src/engine/engine.ts";
import { runSanity, SANITY_PROMPTS } from "../../../src/engine/sanity.ts";
import { describeError, passesThrough } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";

/*
 * The last check before a swap's outcome is written, and before a unit is stopped for the one that
 * replaces it (issue 27 §1): the host is looked at as a client would see it, never taken from what a step
 * meant to do. The unit the outcome names must be active with the process it was checked with (another
 * one means it crashed and was restarted since), answer its engine's health probe on its port, answer it
 * and one sanity prompt through the front door's frontend (frontDoor.port) where the host has one, and
 * be behind the front door's one ready slot. What it saw is said as it is.
 */

/** What should serve: a unit, where it listens, its engine, and what it was last seen with. */
export interface Expected {
  unit: string;
  port: number;
  engine: Engine;
  /** The process it was last checked with; undefined: any live one (a unit started since). */
  mainPid?: number;
  /** The front door's slot that must be the one ready (the host has a front door). */
  slot?: string;
  /**
   * The weights it must serve, as its engine's model info says (an in-place swap's unit serves either
   * revision with the same process: only the engine can tell which).
   */
  modelDir?: string;
}

export type FinalCheck = NonNullable<SwapRecord["finalCheck"]>;

/** How long the check's own requests may take: a serving model answers its health probe in seconds. */
const CHECK_SECONDS = 20;

/**
 * Looks at the host now. Never throws for what it sees (each finding is a problem in the result); throws
 * what no stage handles (the host away, this run over), so the step is tried again or stops.
 */
export async function finalCheck(
  ctx: Pick<StageContext, "host" | "clock">,
  expected: Expected,
  /** `direct`: the unit on its own port only (one the front door does not send requests to yet). */
  options: { direct?: boolean } = {},
): Promise<FinalCheck> {
  const { host } = ctx;
  const { unit, port, engine } = expected;
  const problems: string[] = [];
  const fd = host.frontDoor;
  const viaDoor = options.direct === true ? undefined : fd?.port;
  // a probe per port, each up to CHECK_SECONDS (a front door holds a request while no slot is ready)
  const probes = viaDoor === undefined ? 1 : 2;
  const read = await host.exec(
    sh`
    systemctl show -p ActiveState -p SubState -p MainPID ${unit} 2>/dev/null || true
    echo ---direct---
    ${engine.healthProbe(port, CHECK_SECONDS)} || true
    echo ---door---
    ${viaDoor === undefined ? sh`true` : sh`${engine.healthProbe(viaDoor, CHECK_SECONDS)} || true`}
    echo ---info---
    ${expected.modelDir === undefined ? sh`true` : sh`curl -s --max-time ${CHECK_SECONDS} ${`http://127.0.0.1:${port}${engine.modelInfoPath}`} || true`}`,
    { timeoutMs: probeCommandMs(CHECK_SECONDS, probes + (expected.modelDir === undefined ? 0 : 1)) },
  );
  const [show = "", rest = ""] = read.stdout.split("---direct---\n");
  const [direct = "", afterDirect = ""] = rest.split("---door---\n");
  const [door = "", info = ""] = afterDirect.split("---info---\n");
  const props = Object.fromEntries(
    show
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]),
  );
  const active = props.ActiveState ?? "unknown";
  const mainPid = Number(props.MainPID) || 0;
  if (active !== "active")
    problems.push(
      `\`${unit}\` is not active (${active}${props.SubState && props.SubState !== active ? `, ${props.SubState}` : ""})`,
    );
  else if (mainPid === 0) problems.push(`\`${unit}\` has no process`);
  else if (expected.mainPid !== undefined && expected.mainPid !== 0 && mainPid !== expected.mainPid)
    problems.push(
      `\`${unit}\` restarted since it was checked (MainPID ${mainPid}, was ${expected.mainPid}): it crashed`,
    );
  const directStatus = direct.trim().split("\n").at(-1) ?? "";
  if (directStatus !== "200")
    problems.push(`${engine.healthLabel} on port ${port} answered ${answered(directStatus)}`);
  if (viaDoor !== undefined) {
    const doorStatus = door.trim().split("\n").at(-1) ?? "";
    if (doorStatus !== "200")
      problems.push(
        `${engine.healthLabel} through the front door (port ${viaDoor}) answered ${answered(doorStatus)}`,
      );
  }
  if (expected.modelDir !== undefined && directStatus === "200") {
    const serves = servedPathOf(engine, info);
    if (serves !== expected.modelDir)
      problems.push(
        `the engine on port ${port} serves ${serves === undefined ? "it does not say what" : `\`${serves}\``}, not \`${expected.modelDir}\``,
      );
  }
  if (fd !== undefined && expected.slot !== undefined) {
    try {
      const ready = (await fd.door.servers()).filter((s) => s.state === "ready").map((s) => s.name);
      if (ready.length !== 1 || ready[0] !== expected.slot)
        problems.push(
          `the front door's ready slot is ${ready.length === 0 ? "none" : ready.map((r) => `\`${r}\``).join(" and ")}, not \`${expected.slot}\``,
        );
    } catch (error) {
      if (passesThrough(error)) throw error;
      problems.push(`the front door could not be read: ${describeError(error)}`);
    }
  }
  // one sanity prompt, as a client would send it (through the front door where there is one)
  let sane = false;
  if (problems.length === 0) {
    const sanity = await runSanity(
      engine,
      (command, options) => host.exec(command, options),
      viaDoor ?? port,
      {
        prompts: SANITY_PROMPTS.slice(0, 1),
        timeoutMs: CHECK_SECONDS * 1000,
      },
    );
    sane = sanity.ok;
    if (!sanity.ok) problems.push(`a sanity prompt ${where(viaDoor, port)}: ${sanity.summary}`);
  }
  const at = isoNow(ctx.clock);
  if (problems.length > 0) return { at, unit, ok: false, mainPid, detail: problems.join("; ") };
  return {
    at,
    unit,
    ok: sane,
    mainPid,
    detail: `\`${unit}\` active (MainPID ${mainPid})${expected.modelDir === undefined ? "" : ` serving \`${expected.modelDir.split("/").at(-1)}\``}; ${engine.healthLabel} and a sanity prompt answered ${where(viaDoor, port)}${expected.slot === undefined ? "" : `, \`${expected.slot}\` the front door's ready slot`}`,
  };
}

/** The model directory in the engine's model info, if it names one. */
export function servedPathOf(engine: Engine, body: string): string | undefined {
  try {
    const path = engine.servedModelPath(body);
    return typeof path === "string" ? path : undefined;
  } catch {
    return undefined;
  }
}

function where(viaDoor: number | undefined, port: number): string {
  return viaDoor === undefined ? `on port ${port}` : `through the front door (port ${viaDoor})`;
}

function answered(status: string): string {
  return status === "" || status === "000" ? "nothing" : `HTTP ${status}`;
}
