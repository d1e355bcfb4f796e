import { CodedError } from "../errors.ts";
import { isRepoId, isRevision, REPO_PART_RULES, REVISION_RULES } from "../grammar/model-ref.ts";
import { badResponse, type HubResponse } from "./hub-http.ts";
import { type ModelInfoAnswer, showName, unsafePathReason } from "./hub-schemas.ts";
import type { ModelRef } from "./types.ts";
import type { DownloadSet } from "./weight-files.ts";

/*
 * What the Hub client refuses and how it reads the Hub's answers: refs, too many or unsafe files, JSON bodies,
 * the Link header's next page, a model's license.
 */

/**
 * The most files a swap downloads (the weights and the files beside them), and the most their list may
 * weigh in JSON: the swap's record keeps each with its size and sha256, twice (the model and its plan),
 * under the store's 512 KB per record. 128 KB is about 880 shards with names as the Hub's are; the largest
 * checkpoints have a few hundred.
 */
export const MAX_DOWNLOAD_FILES = 1000;
export const MAX_DOWNLOAD_LIST_BYTES = 128 * 1024;

export function checkRef(ref: ModelRef): void {
  if (!isRepoId(ref.repo)) {
    throw new CodedError(
      "INPUT_INVALID",
      `${JSON.stringify(ref.repo.slice(0, 200))} is not a Hub model id`,
      `Name the model as org/name, each part ${REPO_PART_RULES} (the name not ending '.git'), e.g. Qwen/Qwen3-8B-FP8.`,
    );
  }
  if (!isRevision(ref.revision)) {
    throw new CodedError(
      "INPUT_INVALID",
      `${JSON.stringify(ref.revision.slice(0, 200))} is not a revision`,
      `Give ${REVISION_RULES}; or leave it out for main.`,
    );
  }
}

/** A repository whose download list the swap's record could not keep is refused before anything is read. */
export function refuseTooMany(repo: string, fetched: DownloadSet, weights: number): void {
  const count = fetched.files.length;
  const bytes = Buffer.byteLength(JSON.stringify(fetched.files));
  if (count <= MAX_DOWNLOAD_FILES && bytes <= MAX_DOWNLOAD_LIST_BYTES) return;
  const number = (n: number) => n.toLocaleString("en-US");
  const what =
    count > MAX_DOWNLOAD_FILES
      ? `${number(count)} files to download (at most ${number(MAX_DOWNLOAD_FILES)})`
      : `${number(count)} files to download whose list with sizes and checksums takes ${Math.ceil(bytes / 1024)} KB (at most ${MAX_DOWNLOAD_LIST_BYTES / 1024} KB)`;
  throw new CodedError(
    "HUB_TOO_MANY_FILES",
    `${repo} has ${what}: ${number(weights)} safetensors weight files and ${number(count - weights)} other files at its top level. modelswap keeps each file it downloads, with its size and sha256, in the swap's record, and does not plan more`,
    'Nothing was downloaded or changed. Use a copy of the checkpoint in fewer, larger shards: load it with transformers and save it with save_pretrained(dir, max_shard_size="20GB"), push that to a repository of your own, and swap to it (files in subfolders, pictures, media, PDFs and other weight formats are not downloaded and do not count).',
  );
}

export function refuseUnsafePath(path: string, repo: string): void {
  const reason = unsafePathReason(path);
  if (reason !== undefined) {
    throw new CodedError(
      "HUB_BAD_RESPONSE",
      `The Hub's answer is not usable: ${repo} lists a file named ${showName(path)}, which modelswap refuses because ${reason} (file names become paths on the host)`,
      "Nothing was downloaded or changed. Pick another repository (or a copy whose file names are plain), or ask the repository's owner to rename the file.",
    );
  }
}

export function parseJson(res: HubResponse, what: string): unknown {
  try {
    return JSON.parse(res.body.toString("utf8"));
  } catch {
    throw badResponse(`${what} is not JSON`);
  }
}

/** The `rel="next"` URL of a `Link` header, as the Hub pages tree listings. */
export function nextLink(header: string | null): string | undefined {
  if (header === null) return undefined;
  for (const part of header.split(",")) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (match && /(^|;)\s*rel="?next"?\s*(;|$)/.test(match[2] ?? "")) return match[1];
  }
  return undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** cardData.license (license_name when it is "other"), else a `license:x` tag. */
export function licenseOf(info: ModelInfoAnswer): string | undefined {
  const card = info.cardData ?? {};
  const raw = card.license;
  const license = typeof raw === "string" ? raw : Array.isArray(raw) ? raw.find(isString) : undefined;
  if (license === "other" && isString(card.license_name)) return card.license_name;
  if (license !== undefined && license !== "") return license;
  const tag = (info.tags ?? []).find((t): t is string => isString(t) && t.startsWith("license:"));
  return tag?.slice("license:".length) || undefined;
}

function isString(value: unknown): value is string {
  return typeof value === "string";
}
