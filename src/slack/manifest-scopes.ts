import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { packageFile } from "../package-file.ts";

/**
 * The bot scopes manifest.yml asks for: the one list of them (test/unit/manifest.test.ts checks it
 * against the Web API methods the code calls; `modelswap doctor` against what the token was granted).
 */
export function manifestBotScopes(): string[] {
  const manifest = parse(readFileSync(packageFile("manifest.yml"), "utf8")) as {
    oauth_config?: { scopes?: { bot?: unknown } };
  };
  const scopes = manifest.oauth_config?.scopes?.bot;
  if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === "string"))
    throw new Error("manifest.yml has no oauth_config.scopes.bot list");
  return scopes;
}
