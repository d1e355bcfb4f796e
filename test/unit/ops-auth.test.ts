import { writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OperatorScope } from "../../src/config/operators-schema.ts";
import { operatorsSchema, samePerson } from "../../src/config/operators-schema.ts";
import { OpsAuth, operatorTokens, sendDenied, sendJson } from "../../src/http/ops-auth.ts";
import { captureLog } from "../support/log-capture.ts";
import { tempDir } from "../support/tmp.ts";

const ALICE = "alice-token-0123456789abcdef0123456789";
const BOB = "bob-token-fedcba9876543210fedcba98765";
const CAROL = "carol-token-55555555555555555555555555";

describe("the ops server's authorization (src/http/ops-auth.ts)", () => {
  let server: Server;
  let url: string;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const { log, lines } = captureLog();
  let operators = operatorsSchema.parse([]);

  beforeAll(async () => {
    dir = await tempDir();
    await writeFile(join(dir.path, "carol"), `${CAROL}\n`, { mode: 0o600 });
    operators = operatorsSchema.parse([
      { name: "alice", tokenEnv: "TOKEN_ALICE", scopes: ["read", "request"] },
      { name: "bob", tokenEnv: "TOKEN_BOB", scopes: ["read", "approve"], slackUser: "U0BOB" },
      { name: "carol", tokenFile: join(dir.path, "carol"), scopes: ["read"] },
      { name: "dave", tokenEnv: "TOKEN_DAVE", scopes: ["read"] },
      { name: "erin", tokenEnv: "TOKEN_ERIN", scopes: ["read"] },
    ]);
    const auth = new OpsAuth({
      operators: () => operators,
      env: { TOKEN_ALICE: ALICE, TOKEN_BOB: BOB, TOKEN_ERIN: "short" },
      log,
    });
    server = createServer((req, res) => {
      const scope = new URL(req.url ?? "/", "http://x").searchParams.get("scope") as OperatorScope;
      const result = auth.authorize(req, scope);
      if (!result.ok) sendDenied(res, result);
      else sendJson(res, 200, { operator: result.operator });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await dir.remove();
  });

  const ask = async (scope: OperatorScope, token?: string) => {
    const res = await fetch(`${url}?scope=${scope}`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    // biome-ignore lint/suspicious/noExplicitAny: a JSON answer, checked field by field below
    const body: any = await res.json();
    return { status: res.status, header: res.headers.get("www-authenticate"), body };
  };

  it("admits an operator whose token matches, with the scope the route needs, and says who", async () => {
    const answer = await ask("request", ALICE);
    expect(answer.status).toBe(200);
    expect(answer.body.operator).toEqual({
      name: "alice",
      id: "operator:alice",
      scopes: ["read", "request"],
    });
    expect((await ask("approve", BOB)).body.operator).toMatchObject({
      id: "operator:bob",
      slackUser: "U0BOB",
    });
    expect((await ask("read", CAROL)).body.operator.name).toBe("carol"); // from its tokenFile, trimmed
  });

  it("answers 401 with a code, a message and a fix when the token is missing or unknown", async () => {
    const none = await ask("read");
    expect(none.status).toBe(401);
    expect(none.header).toMatch(/^Bearer/);
    expect(none.body.error).toMatchObject({ code: "API_TOKEN_MISSING" });
    expect(none.body.error.fix).toContain("MODELSWAP_OPERATOR_TOKEN");
    const wrong = await ask("read", `${ALICE}x`);
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe("API_TOKEN_INVALID");
    expect(JSON.stringify(wrong.body)).not.toContain(ALICE);
  });

  it("answers 403 naming the missing scope when the operator may not do this", async () => {
    const answer = await ask("approve", ALICE);
    expect(answer.status).toBe(403);
    expect(answer.body.error).toMatchObject({
      code: "API_SCOPE_MISSING",
      message: "operator alice may read, request, not approve",
    });
    expect(answer.body.error.fix).toContain("operators[].scopes");
    expect((await ask("request", BOB)).status).toBe(403);
  });

  it("never admits an operator whose token is unset or too short, and logs why without the token", async () => {
    expect((await ask("read", "short")).status).toBe(401);
    expect((await ask("read", "")).status).toBe(401);
    const warned = lines().filter(
      (l) => l.msg === "an operator's token cannot be used: that operator is refused until it can",
    );
    expect(warned.map((l) => l.operator).sort()).toEqual(["dave", "erin"]);
    expect(JSON.stringify(lines())).not.toContain(ALICE);
  });

  it("follows a reloaded config: a removed operator's token stops working, a new scope counts", async () => {
    const before = operators;
    operators = operatorsSchema.parse([
      { name: "alice", tokenEnv: "TOKEN_ALICE", scopes: ["read", "approve"] },
    ]);
    try {
      expect((await ask("approve", ALICE)).status).toBe(200);
      expect((await ask("read", BOB)).status).toBe(401);
    } finally {
      operators = before;
    }
  });

  it("lists the tokens that can be read, for redaction", () => {
    expect(operatorTokens(operators, { TOKEN_ALICE: ALICE, TOKEN_BOB: BOB }).sort()).toEqual(
      [ALICE, BOB, CAROL].sort(),
    );
  });

  it("refuses a config operator with no token source, both, a bad scope or a name used twice", () => {
    const bad = [
      [{ name: "x", scopes: ["read"] }],
      [{ name: "x", tokenEnv: "A", tokenFile: "/a", scopes: ["read"] }],
      [{ name: "x", tokenEnv: "A", scopes: ["admin"] }],
      [
        { name: "x", tokenEnv: "A", scopes: ["read"] },
        { name: "x", tokenEnv: "B", scopes: ["read"] },
      ],
      [{ name: "x", token: "abc", scopes: ["read"] }],
    ];
    for (const b of bad) expect(operatorsSchema.safeParse(b).success, JSON.stringify(b)).toBe(false);
  });

  it("knows an operator and the Slack member id the config gives them for one person, and nobody else", () => {
    expect(samePerson(operators, "operator:bob", "U0BOB")).toBe(true);
    expect(samePerson(operators, "U0BOB", "operator:bob")).toBe(true);
    expect(samePerson(operators, "operator:alice", "U0BOB")).toBe(false);
    expect(samePerson(operators, "operator:alice", "operator:alice")).toBe(true);
    expect(samePerson(operators, "operator:carol", "U0CAROL")).toBe(false);
  });
});
