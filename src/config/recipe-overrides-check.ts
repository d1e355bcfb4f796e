import type { z } from "zod";
import { shippedCatalogue } from "../plan/catalogue.ts";
import { problem } from "../problem-text.ts";

/** recipes.overrides name a recipe the catalogue ships or recipes.own defines: another would change nothing. */
export function overridesOfKnownRecipes(file: unknown, ctx: z.RefinementCtx): void {
  const recipes = (file as { recipes?: { overrides?: unknown; own?: unknown } } | null)?.recipes;
  if (!Array.isArray(recipes?.overrides)) return;
  const own = Array.isArray(recipes.own) ? recipes.own : [];
  const known = new Set([
    ...shippedCatalogue().recipes.map((r) => r.id),
    ...own.map((r: unknown) => (r as { id?: unknown } | null)?.id).filter((id) => typeof id === "string"),
  ]);
  recipes.overrides.forEach((o: unknown, i) => {
    const id = (o as { recipe?: unknown } | null)?.recipe;
    if (typeof id === "string" && /^[a-z0-9][a-z0-9.+-]{0,60}$/.test(id) && !known.has(id))
      ctx.addIssue({
        code: "custom",
        path: ["recipes", "overrides", i, "recipe"],
        message: problem(
          `recipes.overrides[].recipe ${id} is no recipe of the catalogue or of recipes.own`,
          "use an id `modelswap recipes` lists (a plan names the ones it applied), e.g. nvfp4-sm120-sglang",
        ),
      });
  });
}
