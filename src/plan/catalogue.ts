import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { CodedError } from "../errors.ts";
import { type Catalogue, type CatalogueRecipe, catalogueSchema } from "./catalogue-schema.ts";

/** Where the shipped catalogue lives (beside this module, in the sources and in the build). */
export const CATALOGUE_FILE = new URL("./catalogue.yaml", import.meta.url);

let shipped: Catalogue | undefined;

/**
 * The recipe catalogue modelswap ships (src/plan/catalogue.yaml), read and validated once. A catalogue
 * that does not match its schema is a bug of the release (test/unit/catalogue.test.ts reads it too).
 */
export function shippedCatalogue(): Catalogue {
  if (shipped !== undefined) return shipped;
  const parsed = catalogueSchema.safeParse(parse(readFileSync(CATALOGUE_FILE, "utf8")));
  if (!parsed.success) {
    throw new CodedError(
      "INTERNAL",
      `the shipped recipe catalogue (${CATALOGUE_FILE.pathname}) is invalid: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      "a bug of this release: reinstall it, or report it with this line",
    );
  }
  shipped = parsed.data;
  return shipped;
}

/** The recipes a plan chooses from: the shipped ones, then the operator's own (recipes.own), which win. */
export function catalogueRecipes(own: readonly CatalogueRecipe[] = []): CatalogueRecipe[] {
  return [...shippedCatalogue().recipes, ...own];
}
