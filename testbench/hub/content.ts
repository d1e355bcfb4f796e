import { createHash } from "node:crypto";

/**
 * File content of the simulated Hub. Small files carry real content; everything else (weights) is
 * generated deterministically from (repo, path, offset), so a "200 GB" model costs no disk and any
 * byte range can be produced on demand.
 */

/** Generated content is produced in blocks of this size; block i depends only on (repo, path, i). */
export const GENERATED_BLOCK_BYTES = 64 * 1024;

/** One block of generated content (always a full block; callers slice). */
export function generatedBlock(repo: string, path: string, index: number): Buffer {
  const seed = createHash("sha256").update(`${repo}\0${path}\0${index}`).digest();
  // xorshift128 seeded from the digest: fast, and identical on every run.
  let x = seed.readUInt32LE(0) | 1;
  let y = seed.readUInt32LE(4);
  let z = seed.readUInt32LE(8);
  let w = seed.readUInt32LE(12);
  const words = new Uint32Array(GENERATED_BLOCK_BYTES / 4);
  for (let i = 0; i < words.length; i++) {
    const t = x ^ (x << 11);
    x = y;
    y = z;
    z = w;
    w = (w ^ (w >>> 19) ^ (t ^ (t >>> 8))) >>> 0;
    words[i] = w;
  }
  return Buffer.from(words.buffer, words.byteOffset, words.byteLength);
}

/** Reads byte ranges of one file: its real content, or generated content. Keeps the last block. */
export class ContentReader {
  private cachedIndex = -1;
  private cachedBlock: Buffer = Buffer.alloc(0);

  constructor(
    private readonly repo: string,
    private readonly path: string,
    private readonly size: number,
    private readonly content: Buffer | undefined,
  ) {}

  /** Bytes [offset, offset + length), clipped to the file size. */
  read(offset: number, length: number): Buffer {
    const end = Math.min(this.size, offset + length);
    if (offset >= end) return Buffer.alloc(0);
    if (this.content !== undefined) return this.content.subarray(offset, end);
    const parts: Buffer[] = [];
    let position = offset;
    while (position < end) {
      const index = Math.floor(position / GENERATED_BLOCK_BYTES);
      if (index !== this.cachedIndex) {
        this.cachedBlock = generatedBlock(this.repo, this.path, index);
        this.cachedIndex = index;
      }
      const blockStart = index * GENERATED_BLOCK_BYTES;
      const from = position - blockStart;
      const to = Math.min(GENERATED_BLOCK_BYTES, end - blockStart);
      parts.push(this.cachedBlock.subarray(from, to));
      position = blockStart + to;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }
}

export interface FileDigests {
  /** sha256 of the content (LFS oid). `sha256IsReal` is false for files too large to hash (see README). */
  sha256: string;
  sha256IsReal: boolean;
  /** Git blob id: of the content for regular files, of the LFS pointer file for LFS files. */
  gitOid: string;
  /** LFS pointer file size (only for LFS files). */
  pointerSize?: number;
}

/** The Git LFS pointer file that git stores in place of an LFS file. */
export function lfsPointer(sha256: string, size: number): string {
  return `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${size}\n`;
}

function gitBlobOid(data: Buffer): string {
  return createHash("sha1").update(`blob ${data.length}\0`).update(data).digest("hex");
}

/**
 * Digests of one file. Content up to `realHashMaxBytes` is hashed for real (the sha256 a downloader
 * can verify); larger generated files get a stand-in sha256 derived from (repo, path, size), since
 * nobody downloads hundreds of GB in a test.
 */
export function computeDigests(
  repo: string,
  path: string,
  size: number,
  lfs: boolean,
  content: Buffer | undefined,
  realHashMaxBytes: number,
): FileDigests {
  let sha256: string;
  let sha256IsReal = true;
  if (content !== undefined) {
    sha256 = createHash("sha256").update(content).digest("hex");
  } else if (size <= realHashMaxBytes) {
    const hash = createHash("sha256");
    const gitHash = lfs ? undefined : createHash("sha1").update(`blob ${size}\0`);
    const reader = new ContentReader(repo, path, size, undefined);
    for (let offset = 0; offset < size; offset += GENERATED_BLOCK_BYTES) {
      const chunk = reader.read(offset, GENERATED_BLOCK_BYTES);
      hash.update(chunk);
      gitHash?.update(chunk);
    }
    sha256 = hash.digest("hex");
    if (gitHash !== undefined) return { sha256, sha256IsReal, gitOid: gitHash.digest("hex") };
  } else {
    sha256 = createHash("sha256").update(`simulated-hub\0${repo}\0${path}\0${size}`).digest("hex");
    sha256IsReal = false;
  }
  if (lfs) {
    const pointer = Buffer.from(lfsPointer(sha256, size));
    return { sha256, sha256IsReal, gitOid: gitBlobOid(pointer), pointerSize: pointer.length };
  }
  if (content !== undefined) return { sha256, sha256IsReal, gitOid: gitBlobOid(content) };
  // Regular (non-LFS) generated file too large to hash: a stand-in oid, like the stand-in sha256.
  const gitOid = createHash("sha1").update(`simulated-hub-oid\0${repo}\0${path}\0${size}`).digest("hex");
  return { sha256, sha256IsReal, gitOid };
}
