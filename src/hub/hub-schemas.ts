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

/** config.json, hf_quant_config.json: any JSON object. */
export const jsonObjectSchema = z.record(z.string(), z.unknown());

/**
 * Why a file name from the Hub cannot become a path under the model's directory on the host, or
 * undefined when it can: relative, `/`-separated, no `..` or `.` or empty segment, no backslash, no NUL,
 * newline or other control character.
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
  return undefined;
}

/** The first problem zod found, as "where: what" for a one-line message. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "invalid";
  const where = issue.path.length === 0 ? "the answer" : issue.path.map(String).join(".");
  return `${where}: ${issue.message}`;
}
