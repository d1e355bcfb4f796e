import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { WebClient } from "@slack/web-api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_HISTORY_LIMIT, parseHistoryArgs } from "../../commands/history.ts";
import { allCommands } from "../../commands/index.ts";
import { parseStatusArgs } from "../../commands/status.ts";
import { type Config, loadConfig } from "../../src/config/load-config.ts";
import { escapeMrkdwn } from "../../src/escape-mrkdwn.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { quote, sh } from "../../src/host/shell-quote.ts";
import { createLogger } from "../../src/log.ts";
import type { CommandQueue, HistoryJob, StatusJob } from "../../src/queue/command-queue.ts";
import type { SwapQueue } from "../../src/queue/swap-queue.ts";
import { AccessControl } from "../../src/slack/access-control.ts";
import { type SlackMessage, truncate } from "../../src/slack/blocks.ts";
import { echo } from "../../src/slack/reply.ts";
import { routeCommand, splitCommandText } from "../../src/slack/route-command.ts";
import type { CommandDeps } from "../../src/slack/sub-command.ts";
import type { Store } from "../../src/store/store.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * Every parser that reads `/llm` text, driven with arbitrary Unicode, control characters, very long input
 * and near-misses of the accepted forms, through the real router and sub-commands with a real config and
 * real access control. Only the adapters behind them (queue, store, audit) are recorders here: what a
 * sub-command hands them is what it admitted. Admitted values must match their schema and be plain words
 * a shell reads as they are; anything else is refused with a message that says what is accepted.
 */
const run = promisify(execFile);
const ALICE = "U0ALICE001"; // requester
const BOB = "U0BOB00001"; // approver
const DAVE = "U0DAVE0001"; // requester and approver
const CHANNEL = "C0LLMOPS01";
const HOSTS = ["gpu-1", "h200"];
const SUBS = ["swap", "status", "history", "cancel", "rollback", "help"];

let dir: { path: string; remove: () => Promise<void> };
let config: Config;
let access: AccessControl;
/** Every string any sub-command admitted, for the round trip through bash at the end. */
const admittedStrings = new Set<string>();

beforeAll(async () => {
  dir = await tempDir();
  const host = (name: string, port: number) => `
  - name: ${name}
    local: true
    modelsDir: /srv/models
    engineSourceDir: /opt/sglang
    venv: /opt/sglang/.venv
    currentUnit: sglang-${name}.service
    servingPort: ${port}`;
  const path = join(dir.path, "modelswap.yaml");
  await writeFile(
    path,
    `slack:\n  channel: ${CHANNEL}\nrequesters:\n  users: [${ALICE}, ${DAVE}]\napprovers:\n  users: [${BOB}, ${DAVE}]\nhosts:${host(HOSTS[0]!, 30000)}${host(HOSTS[1]!, 30001)}\n`,
  );
  config = await loadConfig({
    SLACK_BOT_TOKEN: "xoxb-1-abc",
    SLACK_SIGNING_SECRET: "0123456789abcdef0123",
    MODELSWAP_CONFIG: path,
  });
  // users are listed by id and no group is configured, so no Slack call is ever made
  access = new AccessControl(
    config.file.requesters,
    config.file.approvers,
    {} as WebClient,
    createLogger({ level: "silent" }),
  );
});
afterAll(() => dir.remove());

/** A value a sub-command handed to the queue or the store, by what it is. */
type Admitted =
  | {
      kind: "host" | "swap-id" | "repo" | "revision" | "engine-ref" | "setting" | "setting-value";
      value: string;
    }
  | { kind: "limit" | "tp"; value: number };

/** The sub-commands' adapters as recorders: nothing is stored, every value handed over is noted. */
function recordingDeps(): { deps: CommandDeps; admitted: Admitted[] } {
  const admitted: Admitted[] = [];
  const queue = {
    enqueueStatus: async (job: StatusJob) => {
      for (const host of job.hosts) admitted.push({ kind: "host", value: host });
    },
    enqueueHistory: async (job: HistoryJob) => {
      if (job.host !== undefined) admitted.push({ kind: "host", value: job.host });
      admitted.push({ kind: "limit", value: job.limit });
    },
  };
  const store = {
    locks: {
      hostHolder: async () => undefined,
      lockHost: async (host: string) => {
        admitted.push({ kind: "host", value: host });
        return { ok: true };
      },
      unlockHost: async () => undefined,
    },
    swaps: {
      get: async (id: string) => {
        admitted.push({ kind: "swap-id", value: id });
        return undefined;
      },
      save: async (record: SwapRecord) => {
        const { model, tp, engineRef, sets } = record.request;
        admitted.push({ kind: "repo", value: model.repo }, { kind: "revision", value: model.revision });
        if (engineRef !== undefined) admitted.push({ kind: "engine-ref", value: engineRef });
        for (const set of sets ?? []) {
          admitted.push({ kind: "setting", value: set.setting });
          if (set.value !== undefined) admitted.push({ kind: "setting-value", value: set.value });
        }
        if (tp !== undefined) admitted.push({ kind: "tp", value: tp });
      },
      history: async () => ({ records: [], unreadable: [] }),
    },
    hosts: {
      serving: async (host: string) => {
        admitted.push({ kind: "host", value: host });
        return undefined;
      },
    },
    approvals: { requestCancel: async () => true },
    replicas: { confirm: async () => ({ replicas: 0, acked: 0 }) },
  };
  const deps: CommandDeps = {
    config,
    access,
    queue: queue as unknown as CommandQueue,
    store: store as unknown as Store,
    swaps: { enqueue: async () => undefined, wake: async () => undefined } as unknown as SwapQueue,
    reports: { soon: async () => undefined },
  };
  return { deps, admitted };
}

/** The schema of each kind of admitted value (the narrowest the code promises). */
const SCHEMA: Record<Admitted["kind"], (v: string | number) => boolean> = {
  host: (v) => typeof v === "string" && HOSTS.includes(v) && /^[a-z0-9][a-z0-9-]{0,39}$/.test(v),
  "swap-id": (v) => typeof v === "string" && /^sw-[a-z0-9]{1,20}-[a-f0-9]{6}$/.test(v),
  repo: (v) =>
    typeof v === "string" && /^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}\/[A-Za-z0-9_][A-Za-z0-9._-]{0,95}$/.test(v),
  revision: (v) =>
    typeof v === "string" && /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,127}$/.test(v) && !v.includes(".."),
  "engine-ref": (v) =>
    typeof v === "string" && /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,127}$/.test(v) && !v.includes(".."),
  // --set name=value: the flag's name, and one plain word (src/grammar/flag-setting.ts)
  setting: (v) => typeof v === "string" && /^[a-z][a-z0-9-]{1,60}$/.test(v),
  "setting-value": (v) => typeof v === "string" && /^[A-Za-z0-9_.,:=+/-]{1,100}$/.test(v),
  limit: (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_HISTORY_LIMIT,
  tp: (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 99,
};

/** What a refusal must say, per sub-command: the accepted forms, the usage or the known hosts. */
const EXPLAINS: Record<string, RegExp> = {
  swap: /Accepted model forms|Known hosts: gpu-1, h200/,
  status: /Known hosts: gpu-1, h200/,
  history: /Usage: `\/llm history \[host\] \[--limit N\]`|Known hosts: gpu-1, h200/,
  cancel:
    /\/llm cancel \[swap-id \| rollout-id \| host\]|they look like `sw-|^No swap holds \*[a-z0-9-]+\*: nothing to cancel/,
  rollback: /Known hosts: gpu-1, h200/,
};

/** The fallback text and every block's text: all of what the user is shown. */
function textOf(answer: SlackMessage): string {
  const sections = answer.blocks.map((b) => {
    const text = "text" in b ? b.text : undefined;
    return typeof text === "string" ? text : (text?.text ?? "");
  });
  return [answer.text, ...sections].join("\n");
}

/** No lone surrogate (half an emoji): Slack cannot show such text (String#isWellFormed, ES2024). */
const wellFormed = (text: string) =>
  !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

/**
 * Runs `/llm <text>` as a requester (Alice), an approver (Bob) or both (Dave) and checks every promise.
 * Bob may not start swaps or rollbacks: he is told so, before any argument is read.
 */
async function checkCommand(text: string, user = ALICE): Promise<void> {
  const { deps, admitted } = recordingDeps();
  const answer = await routeCommand(text, { user, channel: CHANNEL }, allCommands(), deps);
  const shown = textOf(answer);
  const { sub } = splitCommandText(text);

  // a refusal or an acknowledgement, never an internal error
  expect(answer.text, text).not.toMatch(/^⚠️/);
  expect(answer.text.length).toBeGreaterThan(0);
  // nothing typed can become a mention, a link or broken text: only the bot's own channel link
  expect(shown.replaceAll(`<#${CHANNEL}>`, ""), text).not.toMatch(/[<>]/);
  expect(wellFormed(shown), text).toBe(true);

  for (const value of admitted) {
    expect(SCHEMA[value.kind](value.value), `${value.kind} ${JSON.stringify(value.value)} from ${text}`).toBe(
      true,
    );
    if (typeof value.value === "string") {
      // a plain word: quoting leaves it as it is, and it cannot pass for an option
      expect(quote(value.value)).toBe(value.value);
      expect(value.value.startsWith("-")).toBe(false);
      admittedStrings.add(value.value);
    }
  }
  if (!SUBS.includes(sub) || sub === "help") {
    // anything unknown, and help whatever follows it, gets the usage of every sub-command
    if (sub !== "help") expect(shown).toContain("Unknown sub-command");
    for (const command of allCommands()) expect(shown).toContain(escapeMrkdwn(command.usage));
    expect(admitted).toEqual([]);
  } else if (user === BOB && (sub === "swap" || sub === "rollback")) {
    expect(shown).toMatch(/^🚫 Only requesters may start/);
    expect(admitted).toEqual([]);
  } else if (admitted.length === 0) {
    expect(shown, text).toMatch(EXPLAINS[sub]!);
  }
}

// ------------------------------------------------------------------------------------- generators

/** Characters and words Slack text may carry that a parser must not trip on. */
const HOSTILE_WORDS = [
  "$(id)",
  "`id`",
  ";reboot",
  "&&",
  "|",
  ">x",
  "<x",
  "<!channel>",
  "<!here>",
  `<@${BOB}>`,
  "<https://evil.example|gpu-1>",
  "<#C0OTHER01|general>",
  "'",
  '"',
  "\\",
  "*",
  "?",
  "~",
  "{a,b}",
  "\u0000",
  "\u0007",
  "\u001b[31m",
  "\u200b",
  "\u202e",
  "\ufeff",
  "gpu‐1", // Unicode hyphen
  "ｇｐｕ-1", // fullwidth
  "GPU-1",
  "gpu-1\u200b",
  "gpu-1;id",
  "gpu-1/../h200",
  "-",
  "--",
  "--limit",
  "--limit=0",
  "--limit=51",
  "--limit=1e1",
  "--limit=０",
  "--limit=-5",
  "--host",
  "--host=gpu-1",
  "--tp",
  "--tp=8",
  "--engine-ref",
  "--dry-run",
  "--dry-run=yes",
  "—host", // an em dash from macOS autocorrect
  "–tp", // an en dash
  "—limit=5",
  "—",
  "——host",
  "—Host",
  "--host=",
  "--host=$(id)",
  "--engine-ref=--upload-pack=x",
  "sw-ABC-123456",
  "sw-abc-12345g",
  "sw-abc-123456\n",
  "sw--123456",
  "../../etc/passwd",
  "😀",
  "👩‍👩‍👧",
  "a".repeat(300),
];

/** Words that are, or are close to, what the sub-commands accept. */
const hostWord = fc.oneof(fc.constantFrom(...HOSTS), fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,12}$/));
const swapId = fc
  .tuple(fc.stringMatching(/^[a-z0-9]{1,20}$/), fc.stringMatching(/^[a-f0-9]{6}$/))
  .map(([t, r]) => `sw-${t}-${r}`);
const part = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,24}$/);
const revision = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._/-]{0,30}$/);
const modelRef = fc
  .tuple(
    fc.constantFrom("", "https://huggingface.co/", "https://hf.co/", "hf://", "<https://huggingface.co/"),
    part,
    part,
    fc.option(revision, { nil: undefined }),
  )
  .map(([prefix, org, name, rev]) => {
    if (prefix.startsWith("https"))
      return `${prefix}${org}/${name}${rev === undefined ? "" : `/tree/${rev}`}`;
    if (prefix.startsWith("<")) return `${prefix}${org}/${name}>`;
    return `${prefix}${org}/${name}${rev === undefined ? "" : `@${rev}`}`;
  });
const goodWord = fc.oneof(
  hostWord,
  swapId,
  modelRef,
  fc.integer({ min: -5, max: 120 }).map(String),
  fc.constantFrom("--limit", "--host", "--tp", "--engine-ref", "--dry-run"),
  fc.integer({ min: 0, max: 60 }).map((n) => `--limit=${n}`),
  revision,
);
const anyWord = fc.oneof(
  { weight: 4, arbitrary: goodWord },
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_WORDS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
);
const separator = fc.constantFrom(" ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028");

/** `<sub> <words…>` with odd spacing and case: near-misses of every accepted form. */
const nearMiss = fc
  .tuple(
    fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...SUBS) },
      { weight: 1, arbitrary: fc.constantFrom("SWAP", "Status", "stat", "swap;", "", "delete", "`help`") },
    ),
    fc.array(fc.tuple(separator, anyWord), { maxLength: 6 }),
    fc.constantFrom("", " ", "\n", "\u00a0"),
  )
  .map(([sub, words, lead]) => `${lead}${sub}${words.map(([sep, w]) => `${sep}${w}`).join("")}`);

/** Arbitrary text: any code points (control characters included), and very long input. */
const arbitraryText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc
    .tuple(fc.constantFrom(...SUBS), fc.string({ unit: "binary", maxLength: 200 }))
    .map(([s, t]) => `${s} ${t}`),
  fc
    .tuple(
      fc.constantFrom(...SUBS),
      fc.string({ unit: "binary", minLength: 1, maxLength: 20 }),
      fc.integer({ min: 200, max: 2000 }),
    )
    .map(([s, t, n]) => `${s} ${t.repeat(n)}`.slice(0, 40_000)),
);

/** An option and its value the ways people type them: `--tp 8`, `--tp=8`, `—tp 8` (autocorrect), `–tp=8`. */
const typedOption = (name: string, value: string) =>
  fc
    .tuple(fc.constantFrom("--", "—", "–"), fc.constantFrom(" ", "="))
    .map(([dash, between]) => ` ${dash}${name}${between}${value}`);

/** Well-formed requests with shapes the sub-commands accept, so the admitted side gets exercised. */
const acceptedShapes = fc.oneof(
  fc
    .tuple(
      fc.option(hostWord, { nil: undefined }),
      fc.constantFrom("", " --share", " —share", " –share"),
      fc.boolean(),
    )
    .map(([h, share, first]) => {
      const host = h === undefined ? "" : ` ${h}`;
      return first ? `status${share}${host}` : `status${host}${share}`;
    }),
  fc
    .tuple(
      fc.option(hostWord, { nil: undefined }),
      fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
    )
    .chain(([h, n]) =>
      (n === undefined ? fc.constant("") : typedOption("limit", String(n))).map(
        (limit) => `history${h === undefined ? "" : ` ${h}`}${limit}`,
      ),
    ),
  swapId.map((id) => `cancel ${id}`),
  hostWord.map((h) => `rollback ${h}`),
  fc
    .tuple(
      modelRef,
      fc.constantFrom(...HOSTS),
      fc.option(fc.integer({ min: 1, max: 99 }), { nil: undefined }),
      fc.option(revision, { nil: undefined }),
    )
    .chain(([m, h, tp, ref]) =>
      fc
        .tuple(
          typedOption("host", h),
          tp === undefined ? fc.constant("") : typedOption("tp", String(tp)),
          ref === undefined ? fc.constant("") : typedOption("engine-ref", ref),
        )
        .map(([host, tps, refs]) => `swap ${m}${host}${tps}${refs}`),
    ),
);

// ------------------------------------------------------------------------------------- properties

describe("every parser that sees /llm text", () => {
  it("splitCommandText: never throws; the sub-command is the first word, lowercased; no word is blank", () => {
    fc.assert(
      fc.property(fc.oneof(arbitraryText, nearMiss), (text) => {
        const { sub, args } = splitCommandText(text);
        expect(sub).toBe(sub.toLowerCase());
        expect(sub).not.toMatch(/\s/);
        for (const word of args) expect(word).toMatch(/^\S+$/);
      }),
      { numRuns: 500 },
    );
  });

  it("router and sub-commands: arbitrary Unicode, control characters and very long text", async () => {
    await fc.assert(
      fc.asyncProperty(arbitraryText, fc.constantFrom(ALICE, BOB, DAVE), async (text, user) => {
        await checkCommand(text, user);
      }),
      { numRuns: 300 },
    );
  });

  it("router and sub-commands: near-misses of every accepted form, with hostile words", async () => {
    await fc.assert(
      fc.asyncProperty(nearMiss, fc.constantFrom(ALICE, BOB, DAVE), async (text, user) => {
        await checkCommand(text, user);
      }),
      { numRuns: 1500 },
    );
  });

  it("router and sub-commands: accepted shapes are admitted only as schema-valid plain words", async () => {
    await fc.assert(
      fc.asyncProperty(acceptedShapes, async (text) => {
        await checkCommand(text);
      }),
      { numRuns: 600 },
    );
  });

  it("options typed with an em or en dash (autocorrect) or as --opt=value are admitted as --opt", async () => {
    for (const text of [
      "swap Qwen/Qwen3-8B —host h200 —tp 8 —engine-ref v0.5.2",
      "swap Qwen/Qwen3-8B --host=h200 --tp=8 --engine-ref=v0.5.2",
      "swap Qwen/Qwen3-8B –host=h200 –tp=8 —engine-ref=v0.5.2",
    ]) {
      const { deps, admitted } = recordingDeps();
      const answer = await routeCommand(text, { user: ALICE, channel: CHANNEL }, allCommands(), deps);
      expect(admitted, `${text}: ${answer.text}`).toEqual(
        expect.arrayContaining([
          { kind: "host", value: "h200" },
          { kind: "tp", value: 8 },
          { kind: "engine-ref", value: "v0.5.2" },
        ]),
      );
    }
    for (const text of ["history gpu-1 —limit 5", "history gpu-1 –limit=5", "history --limit=5 gpu-1"]) {
      const { deps, admitted } = recordingDeps();
      await routeCommand(text, { user: ALICE, channel: CHANNEL }, allCommands(), deps);
      expect(admitted, text).toEqual([
        { kind: "host", value: "gpu-1" },
        { kind: "limit", value: 5 },
      ]);
    }
  });

  it("parseSwapRequest, parseHistoryArgs and parseStatusArgs: never throw on any list of words; a refusal gives a reason", () => {
    const words = fc.array(fc.oneof(anyWord, fc.string({ unit: "binary", maxLength: 40 })), { maxLength: 8 });
    fc.assert(
      fc.property(words, (args) => {
        const swap = parseSwapRequest(args);
        if (!swap.ok) expect(swap.reason.length).toBeGreaterThan(5);
        else {
          expect(SCHEMA.repo(swap.request.model.repo)).toBe(true);
          expect(SCHEMA.revision(swap.request.model.revision)).toBe(true);
          if (swap.request.engineRef !== undefined)
            expect(SCHEMA["engine-ref"](swap.request.engineRef)).toBe(true);
          for (const set of swap.request.sets ?? []) {
            expect(SCHEMA.setting(set.setting)).toBe(true);
            if (set.value !== undefined) expect(SCHEMA["setting-value"](set.value)).toBe(true);
          }
          if (swap.request.host !== undefined) expect(swap.request.host).toMatch(/^[a-z0-9][a-z0-9-]{0,39}$/);
        }
        const history = parseHistoryArgs(args);
        if (!history.ok) expect(history.reason.length).toBeGreaterThan(5);
        else expect(SCHEMA.limit(history.limit)).toBe(true);
        const status = parseStatusArgs(args);
        if (!status.ok) expect(status.reason.length).toBeGreaterThan(5);
        else if (status.host !== undefined) expect(status.host.startsWith("-")).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  // emoji and other astral characters are two UTF-16 units: a cut must not fall between them
  const astral = fc.string({
    unit: fc.constantFrom("a", "😀", "𐀀", "👩‍👧", "\n", "<", "`"),
    minLength: 20,
    maxLength: 80,
  });

  it("echo: untrusted text comes back on one escaped line, short, and still well-formed", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: "binary", maxLength: 80 }), astral, fc.constantFrom(...HOSTILE_WORDS)),
        (text) => {
          const shown = echo(text);
          expect(shown).not.toMatch(/[\r\n\t<>]/);
          expect(wellFormed(shown)).toBe(true);
          // at most 40 characters of the input (and the cut mark) between the backticks
          const unescaped = shown.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
          expect(Array.from(unescaped).length).toBeLessThanOrEqual(42);
          expect([...shown.slice(1, -1)].filter((c) => c === "`")).toEqual([]);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("truncate (every reply section and fallback text): at most max units, still well-formed", () => {
    fc.assert(
      fc.property(
        fc.oneof(astral, fc.string({ unit: "binary" })),
        fc.integer({ min: 1, max: 90 }),
        (text, max) => {
          const cut = truncate(text, max);
          expect(cut.length).toBeLessThanOrEqual(max);
          expect(wellFormed(cut)).toBe(true);
          if (text.length <= max) expect(cut).toBe(text);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe("admitted values through a real bash", () => {
  it("come back byte for byte from `printf` when quoted with sh/quote", async () => {
    // every string a sub-command admitted, in the properties above and in these samples
    for (const text of fc.sample(fc.oneof(acceptedShapes, nearMiss), 600)) await checkCommand(text);
    const values = [...admittedStrings];
    expect(values.length).toBeGreaterThan(200);
    expect(values.some((v) => v.includes("/"))).toBe(true);
    const command = sh`printf '%s\\0' ${values}`;
    const { stdout } = await run("bash", ["-c", command.text], { maxBuffer: 16 * 1024 * 1024 });
    expect(stdout.split("\0").slice(0, -1)).toEqual(values);
  });
});
