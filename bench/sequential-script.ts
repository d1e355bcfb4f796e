import { buildScript } from "../jobs/swap/stages/build-task.ts";
import { downloadScript, verificationFiles } from "../jobs/swap/stages/download-task.ts";
import { LOADED, SINGLE_STREAM } from "../src/engine/bench-serving.ts";
import { SANITY_PROMPTS } from "../src/engine/sanity.ts";
import { benchCommand } from "../src/engine/sglang/bench-command.ts";
import { generateBody, generateCommand } from "../src/engine/sglang/generate-judge.ts";
import { quote, sh } from "../src/host/shell-quote.ts";
import type { ModelInfo } from "../src/hub/types.ts";

export interface SequentialInput {
  ssh: { user: string; port: number; privateKeyPath: string };
  /** Where the script appends `<step> <unix seconds>` lines. */
  timesFile: string;
  model: ModelInfo;
  modelDir: string;
  /** A scratch directory on the host for the download's lists and the build's outputs. */
  workDir: string;
  engine: {
    buildDir: string;
    venv: string;
    upstream: string;
    fetchRef: string;
    commit: string;
    patches: readonly string[];
  };
  unit: { dir: string; old: string; name: string; text: string };
  servingPort: number;
}

/** The steps the script times, in order. */
export const SCRIPT_STEPS = ["download", "build", "switch", "health", "sanity", "benchmark"] as const;

const EOF_MARK = "MODELSWAP_EOF";

/**
 * The swap as someone does it by hand: the bot's own stage commands — the download (with its size and
 * sha256 checks), the engine build, the switch, a health wait, the sanity prompts and the two benchmark
 * runs — over SSH, one after another, from a plain bash script. Each step appends its start time to
 * `timesFile`, and `end` when all is done.
 */
export function sequentialScript(input: SequentialInput): string {
  const { model, modelDir, workDir, engine, unit, servingPort } = input;
  const files = verificationFiles(model);
  const download = [
    sh`mkdir -p ${workDir}/download`.text,
    heredoc(`${workDir}/download/sizes`, files.sizes),
    heredoc(`${workDir}/download/sha256sums`, files.sums),
    downloadScript(model, modelDir, `${workDir}/download`).text,
  ];
  const build = [
    sh`mkdir -p ${workDir}/build`.text,
    buildScript({
      kind: "sglang",
      buildDir: engine.buildDir,
      venv: engine.venv,
      upstream: engine.upstream,
      fetchRef: engine.fetchRef,
      commit: engine.commit,
      patches: engine.patches,
      dir: `${workDir}/build`,
    }).text,
  ];
  const switching = [
    heredoc(`${unit.dir}/${unit.name}`, unit.text),
    "systemctl daemon-reload",
    sh`systemctl disable --now ${unit.old}`.text,
    sh`systemctl enable --now ${unit.name}`.text,
  ];
  const url = `http://127.0.0.1:${servingPort}/health_generate`;
  const health = [
    // as by hand: look once a second, for at most ten minutes
    "for i in $(seq 1 600); do",
    `  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 ${quote(url)})" = 200 ] && exit 0`,
    "  sleep 1",
    "done",
    "exit 1",
  ];
  const sanity = SANITY_PROMPTS.map(
    (p) =>
      `${generateCommand(servingPort, 60).text} <<'${EOF_MARK}'\n${generateBody(p.prompt)}\n${EOF_MARK}\necho`,
  );
  const benchmark = [SINGLE_STREAM, LOADED].map(
    (settings) => benchCommand({ ...settings, venv: engine.venv, port: servingPort, model: modelDir }).text,
  );
  const steps: Record<(typeof SCRIPT_STEPS)[number], string[]> = {
    download,
    build,
    switch: switching,
    health,
    sanity,
    benchmark,
  };
  const { ssh } = input;
  return [
    "#!/usr/bin/env bash",
    "# A swap by hand: the same commands as the bot's stages, over SSH, one after another.",
    "set -euo pipefail",
    `host() { ssh -i ${quote(ssh.privateKeyPath)} -p ${ssh.port} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR ${quote(`${ssh.user}@127.0.0.1`)} "$1"; }`,
    `mark() { echo "$1 $(date +%s.%N)" >> ${quote(input.timesFile)}; }`,
    ...SCRIPT_STEPS.flatMap((step) => [
      `mark ${step}`,
      `host ${quote(`bash -c ${quote(["set -euo pipefail", ...steps[step]].join("\n"))}`)}`,
    ]),
    "mark end",
    "",
  ].join("\n");
}

function heredoc(path: string, content: string): string {
  if (content === "") return `: > ${quote(path)}`;
  return `cat > ${quote(path)} <<'${EOF_MARK}'\n${content.replace(/\n$/, "")}\n${EOF_MARK}`;
}
