import { requestApproval } from "../../../src/approval/gate.ts";
import { planHash } from "../../../src/approval/plan-hash.ts";
import { engineOfExecStart } from "../../../src/engine/engines.ts";
import { asCodedError, passesThrough } from "../../../src/errors.ts";
import { slotAt } from "../../../src/front-door/host-front-door.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { execStartWords, readHostFacts } from "../../../src/plan/read-host-facts.ts";
import { rollbackPlan } from "../../../src/swap/rollback-plan.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import { planClients } from "./front-door.ts";
import { notePrevious, refuseFailingPlan } from "./preflight.ts";

/**
 * Preflight of `/llm rollback`: the unit that served before is still installed and its model files are
 * still there, so the plan is that unit as it is — nothing to resolve, download or build. Then the same
 * approval, switch, health, sanity and benchmark as any swap.
 */
export async function rollbackPreflightStage(
  ctx: Pick<
    StageContext,
    | "clock"
    | "emit"
    | "engine"
    | "gate"
    | "host"
    | "ledger"
    | "log"
    | "previousEngine"
    | "settings"
    | "signal"
    | "swap"
  >,
): Promise<StepResult> {
  const { swap, host } = ctx;
  const target = swap.record.rollbackTo!;
  swap.stage("resolve", "skipped", "rollback: the model is already on the host");
  await swap.begin("preflight", `checking ${target.unit} and its files`);
  const { unit: currentUnit, livePort } = await notePrevious(ctx);
  if (currentUnit === target.unit) {
    swap.stage("preflight", "failed", `${host.name} already serves ${target.unit}`);
    return { fail: `${host.name} already serves ${target.unit}`, touched: false };
  }
  try {
    const facts = await readHostFacts(host, {
      host: host.name,
      modelsDir: host.config.modelsDir,
      venv: host.config.venv,
      currentUnit,
      modelDir: host.config.modelsDir,
    });
    const read = await host.exec(sh`
      f=$(systemctl show ${target.unit} --property=FragmentPath --value)
      echo "$f"
      if [ -n "$f" ] && [ -r "$f" ]; then cat "$f"; fi`);
    const [path = "", ...lines] = read.stdout.split("\n");
    const text = lines.join("\n");
    const words = execStartWords(text);
    // the unit's engine says where its model is (SGLang's --model-path, vLLM's `serve <model>`)
    const modelPath = engineOfExecStart(words).modelDirOf(words);
    const exists = modelPath === undefined ? false : (await host.exec(sh`test -d ${modelPath}`)).code === 0;
    const earlier = target.swapId === undefined ? undefined : await ctx.ledger.planOf(target.swapId);
    // always cold: the unit goes back as installed, on its own port (behind that port's slot)
    const planned = await planClients(host, livePort, ctx.settings);
    const port = Number(words[words.indexOf("--port") + 1]);
    const slot = host.frontDoor === undefined ? undefined : slotAt(host.frontDoor, port);
    const door = planned.clients.frontDoor;
    const clients =
      door === undefined || slot === undefined
        ? planned.clients
        : { ...planned.clients, frontDoor: { ...door, server: slot.server } };
    const { check } = planned;
    const plan = rollbackPlan({
      swapId: swap.record.id,
      host: facts,
      hostConfig: { modelsDir: host.config.modelsDir, venv: host.config.venv, unitDir: host.config.unitDir },
      target: { name: target.unit, path: path.trim(), text, modelDirExists: exists },
      earlier,
      clients,
      ...(check === undefined ? {} : { frontDoorCheck: check }),
    });
    // name the model, not the unit, once the plan knows it (the config's first unit names none)
    swap.set({
      plan,
      planHash: planHash(plan),
      request: { ...swap.record.request, model: { ...swap.record.request.model, repo: plan.model.repo } },
    });
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.stage("preflight", "failed", asCodedError(error).message);
    return failedWith(error, false);
  }
  const refused = refuseFailingPlan(ctx);
  if (refused !== undefined) return refused;
  swap.stage("preflight", "done", `back to ${target.unit}`);
  swap.stage("download", "skipped", "nothing missing: the model files are on the host");
  swap.stage("build", "skipped", "nothing to build: the unit runs as installed");
  requestApproval(ctx);
  return { next: "prepare" };
}
