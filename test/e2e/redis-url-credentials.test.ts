import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, startBench } from "../../testbench/bench.ts";
import { modelswapBin } from "../../testbench/modelswap-bin.ts";
import { type BenchRedis, startRedis } from "../../testbench/redis.ts";
import { until } from "../../testbench/until.ts";

/**
 * Every form of a credential in REDIS_URL is a secret (issue #27, item 4). ioredis 6 logs in with
 * `redis://host/0?password=…` (every query parameter becomes an option), but only the user info's password
 * was redacted: the password reached the start-up line (`modelswap started`, its `redis` field) and
 * doctor's Redis row as it was written. Here a real redis-server requires a password (requirepass) with a
 * random part, the real `modelswap start` and `modelswap doctor` get it in each form a URL can carry it,
 * and the password, as written and as decoded, must appear nowhere in what they print, while the URL is
 * shown with `***` in its place and the connection works.
 */
const run = promisify(execFile);
const BIN = modelswapBin().path;
const PLAIN = `qpw-${randomBytes(6).toString("hex")}`;
/** A password with the characters a URL has to encode, and a space (`+` in a query is read as one). */
const SPECIAL = `s p@ss/w+rd%#${randomBytes(6).toString("hex")}`;

let bench: Bench;
let locked: BenchRedis;
let admin: Redis;

beforeAll(async () => {
  bench = await startBench({ logTo: "silent", hosts: [{ name: "gpu-1", serving: false, engine: "none" }] });
  locked = await startRedis(join(bench.dir, "locked-redis"), { password: PLAIN });
  admin = new Redis({ host: "127.0.0.1", port: locked.port, password: PLAIN });
  await admin.ping();
}, 120_000);

afterAll(async () => {
  admin?.disconnect();
  await locked?.stop();
  await bench?.stop();
});

/** Sets the locked server's password (the admin connection stays logged in). */
async function requirePassword(password: string): Promise<void> {
  await admin.config("SET", "requirepass", password);
}

interface Doctor {
  code: number;
  out: string;
}

/** The real `modelswap doctor`, with the bench's environment and this REDIS_URL: all it printed. */
async function doctor(redisUrl: string, json: boolean, extra: Record<string, string> = {}): Promise<Doctor> {
  const args = [BIN, "doctor", "--timeout", "5", ...(json ? ["--json"] : [])];
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    ...modelswapBin().env,
    ...bench.env,
    REDIS_URL: redisUrl,
    ...extra,
  };
  try {
    const { stdout, stderr } = await run(process.execPath, args, { env, timeout: 90_000 });
    return { code: 0, out: `${stdout}\n${stderr}` };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: `${e.stdout}\n${e.stderr}` };
  }
}

/** The Redis row of doctor's JSON. */
function redisRow(out: string): { status: string; saw: string } {
  const checks = (
    JSON.parse(out.trim()) as { checks: { target: string; check: string; status: string; saw: string }[] }
  ).checks;
  const row = checks.find((c) => c.target === "Redis" && c.check === "reachable");
  expect(row, out).toBeDefined();
  return row!;
}

function expectNone(text: string, forms: string[]): void {
  for (const form of forms)
    expect(text.includes(form), `${JSON.stringify(form)} printed in:\n${text}`).toBe(false);
}

describe("a password in REDIS_URL, in each form ioredis reads", () => {
  it("?password=: the bot logs in with it, and its start-up line shows ?password=***", async () => {
    await requirePassword(PLAIN);
    const port = locked.port;
    bench.env.REDIS_URL = `redis://127.0.0.1:${port}/0?password=${PLAIN}`;
    const bot = await bench.spawnBot();
    try {
      // the password was used: the bot's connections are on the locked server, by name
      await until(async () => /name=modelswap-worker/.test(String(await admin.client("LIST"))), {
        what: "the bot's worker connection on the password-protected Redis",
        timeoutMs: 30_000,
      });
      const started = await until(
        async () =>
          (await readFile(bot.logPath, "utf8"))
            .split("\n")
            .filter((line) => line.startsWith("{"))
            .map((line) => JSON.parse(line) as { msg?: string; redis?: string })
            .find((line) => line.msg === "modelswap started"),
        { what: "the start-up line in the bot's log", timeoutMs: 30_000 },
      );
      expect.soft(started.redis).toBe(`redis://127.0.0.1:${port}/0?password=***`);
    } finally {
      await bot.kill("SIGTERM");
      bench.env.REDIS_URL = bench.redis.url;
    }
    expectNone(await readFile(bot.logPath, "utf8"), [PLAIN]);
  }, 120_000);

  it("?password= in doctor, human and --json: the row passes and shows ?password=***", async () => {
    await requirePassword(PLAIN);
    const url = `redis://127.0.0.1:${locked.port}/0?password=${PLAIN}`;
    const [human, json] = [await doctor(url, false), await doctor(url, true)];
    expect
      .soft(human.out)
      .toMatch(
        new RegExp(`✔ reachable +redis://127\\.0\\.0\\.1:${locked.port}/0\\?password=\\*\\*\\*: PONG`),
      );
    expect(redisRow(json.out)).toMatchObject({ status: "pass" });
    expect
      .soft(redisRow(json.out).saw)
      .toMatch(new RegExp(`^redis://127\\.0\\.0\\.1:${locked.port}/0\\?password=\\*\\*\\*: PONG`));
    expectNone(`${human.out}\n${json.out}`, [PLAIN]);
  }, 120_000);

  it("URL-encoded, in the query and in the user info: neither the encoded nor the decoded form is printed", async () => {
    await requirePassword(SPECIAL);
    const encoded = encodeURIComponent(SPECIAL);
    const forms = [SPECIAL, encoded, SPECIAL.split("#")[0]!];
    const inQuery = await doctor(`redis://127.0.0.1:${locked.port}/0?password=${encoded}`, true);
    expect(redisRow(inQuery.out)).toMatchObject({ status: "pass" });
    expect.soft(redisRow(inQuery.out).saw).toMatch(/\/0\?password=\*\*\*: PONG/);
    const inUserInfo = await doctor(`redis://default:${encoded}@127.0.0.1:${locked.port}/0`, false);
    expect
      .soft(inUserInfo.out)
      .toMatch(new RegExp(`✔ reachable +redis://default:\\*\\*\\*@127\\.0\\.0\\.1:${locked.port}/0: PONG`));
    expectNone(`${inQuery.out}\n${inUserInfo.out}`, forms);
  }, 120_000);

  it("a user name alone (redis://secret@host, redis-cli's password form): shown as ***, never printed", async () => {
    await requirePassword(PLAIN);
    // ioredis sends it as a user name with no password: Redis refuses, and says so without the secret
    const lone = await doctor(`redis://${PLAIN}@127.0.0.1:${locked.port}`, false);
    expect(lone.code).toBe(1);
    expect
      .soft(lone.out)
      .toMatch(new RegExp(`✖ reachable +redis://\\*\\*\\*@127\\.0\\.0\\.1:${locked.port}: `));
    expectNone(lone.out, [PLAIN]);
  }, 120_000);

  it("a user name in REDIS_URL and the password in REDIS_PASSWORD, as docs/redis.md says: the password is used", async () => {
    await requirePassword(PLAIN);
    // ioredis reads redis://user@host as that user with an empty password, which overrode REDIS_PASSWORD
    const out = await doctor(`redis://default@127.0.0.1:${locked.port}/0`, true, { REDIS_PASSWORD: PLAIN });
    expect(redisRow(out.out), out.out).toMatchObject({ status: "pass" });
    expectNone(out.out, [PLAIN]);
  }, 120_000);
});
