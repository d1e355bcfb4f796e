import { z } from "zod";
import { OPERATOR_NAME, OPERATOR_NAME_RULE, operatorId } from "../grammar/operator-id.ts";
import { USER_ID } from "../grammar/slack-ids.ts";
import { problem } from "../problem-text.ts";

/** What an operator's token lets them do: read (status, history, audit), request (swap, cancel, rollback), approve. */
export const OPERATOR_SCOPES = ["read", "request", "approve"] as const;
export type OperatorScope = (typeof OPERATOR_SCOPES)[number];

const envName = z
  .string()
  .regex(
    /^[A-Z_][A-Z0-9_]{0,63}$/,
    problem("not an environment variable name", "use capitals, digits and _, e.g. MODELSWAP_TOKEN_ALICE"),
  );

const tokenFile = z
  .string()
  .regex(
    /^\/[A-Za-z0-9._/@+-]*$/,
    problem(
      "operators[].tokenFile must be an absolute path of letters, digits and ._/@+-",
      "use a path like /etc/modelswap/tokens/alice",
    ),
  );

export const operatorSchema = z
  .strictObject({
    name: z
      .string()
      .regex(OPERATOR_NAME, problem("not an operator name", `use ${OPERATOR_NAME_RULE}, e.g. alice`)),
    /** The environment variable of the bot's process that holds this operator's token. */
    tokenEnv: envName.optional(),
    /** Or a file (readable by the bot's user alone) that holds it. Never the token itself. */
    tokenFile: tokenFile.optional(),
    scopes: z
      .array(
        z.enum(
          OPERATOR_SCOPES,
          problem("not a scope", "use read, request or approve, e.g. scopes: [read, request]"),
        ),
      )
      .min(1, problem("the operator has no scope", "give at least one, e.g. scopes: [read]")),
    /**
     * The same person's Slack member id, when they have one: a swap they requested in Slack is theirs from
     * the CLI too (they cannot approve it there), and the other way round.
     */
    slackUser: z
      .string()
      .regex(USER_ID, problem("not a Slack user id", "use the member id (U…), e.g. U0123ABCD"))
      .optional(),
  })
  .refine(
    (o) => (o.tokenEnv === undefined) !== (o.tokenFile === undefined),
    problem(
      "an operator needs exactly one of tokenEnv and tokenFile",
      "name the environment variable (tokenEnv: MODELSWAP_TOKEN_ALICE) or the file (tokenFile: /etc/modelswap/tokens/alice) that holds the token; the token itself never goes in the config",
    ),
  );
export type OperatorConfig = z.infer<typeof operatorSchema>;

/** `operators:`: the people who may use the CLI and the HTTP API, each with a token of their own. */
export const operatorsSchema = z
  .array(operatorSchema)
  .default([])
  .refine(
    (list) => new Set(list.map((o) => o.name)).size === list.length,
    problem("an operator name is used twice", "give every operator a different name"),
  );

/**
 * Whether two identities are one person: the same id, or an operator (`operator:<name>`) and the Slack
 * member id the config gives them (operators[].slackUser).
 */
export function samePerson(operators: readonly OperatorConfig[], a: string, b: string): boolean {
  if (a === b) return true;
  return operators.some((o) => {
    if (o.slackUser === undefined) return false;
    const ids = [operatorId(o.name), o.slackUser];
    return ids.includes(a) && ids.includes(b);
  });
}
