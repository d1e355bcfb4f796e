import { z } from "zod";

/**
 * Zod schemas for the Hub API answers modelswap reads. The Hub (or whatever HF_ENDPOINT points at) is
 * untrusted: shas, sizes, digests and file names are checked strictly, because they end up in commands
 * and paths on the GPU host. User-written fields (the model card's license, tags) are read leniently.
 */

const SHA_40 = /^[0-9a-f]{40}$/;
const SHA_256 = /^[0-9a-f]{64}$/;

const byteCount = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** `GET /api/models/{repo}/revision/{rev}`: the fields resolve uses. */
export const modelInfoSchema = z.object({
  id: z.string().optional(),
  sha: z.string().regex(SHA_40, "sha is not a 40-hex commit id"),
  gated: z.union([z.boolean(), z.literal("auto"), z.literal("manual")]).optional(),
  cardData: z.record(z.string(), z.unknown()).nullish(),
  tags: z.array(z.unknown()).optional(),
  siblings: z.array(z.object({ rfilename: z.string() })).optional(),
});
export type ModelInfoAnswer = z.infer<typeof modelInfoSchema>;

/** One entry of `GET /api/models/{repo}/tree/{sha}?recursive=true`. */
export const treeEntrySchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("file"),
    path: z.string(),
    size: byteCount,
    oid: z.string().optional(),
    lfs: z.object({ oid: z.string().regex(SHA_256, "lfs.oid is not a sha256"), size: byteCount }).nullish(),
  }),
  z.object({ type: z.literal("directory"), path: z.string() }),
]);
export const treePageSchema = z.array(treeEntrySchema);
export type TreeEntry = z.infer<typeof treeEntrySchema>;

/** config.json, hf_quant_config.json, tokenizer_config.json and the other code configs: any JSON object. */
export const jsonObjectSchema = z.record(z.string(), z.unknown());

/** What a file name may be made of: what real model repositories use, nothing a shell or a reader could misread. */
const FILE_NAME_CHAR = /[A-Za-z0-9 ._+@=,-]/;
/** The longest name one directory entry may have on Linux file systems (NAME_MAX). */
const MAX_SEGMENT_BYTES = 255;

/**
 * Why a file name from the Hub cannot become a path under the model's directory on the host, or
 * undefined when it can: relative, `/`-separated, no `..` or `.` or empty segment, no part starting with
 * `-` (an option to whichever command sees it) or with or ending in a space, only ASCII letters, digits,
 * spaces and `._+@=,-` (no shell syntax such as `$(…)`, backticks or `;`, no look-alike letters or direction
 * marks that could disguise a name in Slack), parts within NAME_MAX, and nothing in `.cache/`, where `hf`
 * keeps its own record of what it has downloaded.
 */
export function unsafePathReason(path: string): string | undefined {
  if (path === "") return "it is empty";
  if (path.includes("\0")) return "it contains a NUL byte";
  if (/[\r\n]/.test(path)) return "it contains a newline";
  if (/[\x00-\x1f\x7f]/.test(path)) return "it contains a control character";
  if (path.includes("\\")) return "it contains a backslash";
  if (path.startsWith("/")) return "it is an absolute path";
  if (path.length > 1024) return "it is longer than 1024 characters";
  const segments = path.split("/");
  if (segments.includes("..")) return 'it contains a ".." segment';
  if (segments.includes(".")) return 'it contains a "." segment';
  if (segments.includes("")) return "it contains an empty segment";
  const foreign = /[^\x00-\x7f]/u.exec(path)?.[0];
  if (foreign !== undefined) {
    const code = `U+${(foreign.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
    return `it contains the non-ASCII character ${code} (look-alike letters and direction marks can disguise a name)`;
  }
  const odd = [...path].find((c) => c !== "/" && !FILE_NAME_CHAR.test(c));
  if (odd !== undefined) {
    return `it contains ${JSON.stringify(odd)} (file names may hold only letters, digits, spaces and . _ - + @ = ,)`;
  }
  if (segments.some((s) => s.startsWith("-")))
    return 'a part of it starts with "-" (it would read as an option)';
  if (segments.some((s) => s.startsWith(" ") || s.endsWith(" ")))
    return "a part of it starts or ends with a space";
  if (segments.some((s) => s.length > MAX_SEGMENT_BYTES)) {
    return `a part of it is longer than ${MAX_SEGMENT_BYTES} characters (the host's file system limit)`;
  }
  if (segments[0] === ".cache") return "it is inside .cache/, where hf keeps its own download records";
  return undefined;
}

/** A name from the Hub as it may be shown: quoted, cut at 200 characters, anything not plain ASCII escaped. */
export function showName(name: string): string {
  const cut = name.length > 200 ? `${name.slice(0, 200)}…` : name;
  return JSON.stringify(cut).replace(/[^\x20-\x7e]/g, (c) =>
    c === "…" ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The first problem zod found, as "where: what" for a one-line message. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "invalid";
  const where = issue.path.length === 0 ? "the answer" : issue.path.map(String).join(".");
  return `${where}: ${issue.message}`;
}
