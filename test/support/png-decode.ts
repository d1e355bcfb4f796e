import { crc32, inflateSync } from "node:zlib";

/**
 * A strict little PNG reader for tests (written apart from the encoder, on node:zlib's own inflate and
 * CRC-32): checks the signature, every chunk's CRC, the chunk order, undoes the five scanline filters,
 * and returns RGB pixels. 8-bit truecolour, truecolour with alpha and palette images only.
 */
export interface DecodedPng {
  width: number;
  height: number;
  colorType: number;
  /** Chunk types in file order. */
  chunks: string[];
  /** 0xRRGGBB per pixel, row by row (alpha dropped). */
  packed: Uint32Array;
  rgb(x: number, y: number): [number, number, number];
}

const SIGNATURE = "89504e470d0a1a0a";

export function decodePng(bytes: Buffer): DecodedPng {
  if (bytes.subarray(0, 8).toString("hex") !== SIGNATURE) throw new Error("not a PNG signature");
  const chunks: string[] = [];
  const idat: Buffer[] = [];
  let header: Buffer | undefined;
  let palette: Buffer | undefined;
  let at = 8;
  while (at < bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.subarray(at + 4, at + 8).toString("latin1");
    const data = bytes.subarray(at + 8, at + 8 + length);
    const crc = bytes.readUInt32BE(at + 8 + length);
    if (crc32(bytes.subarray(at + 4, at + 8 + length)) !== crc) throw new Error(`bad CRC in ${type}`);
    chunks.push(type);
    if (type === "IHDR") header = data;
    else if (type === "PLTE") palette = data;
    else if (type === "IDAT") idat.push(data);
    at += 12 + length;
    if (type === "IEND") break;
  }
  if (at !== bytes.length) throw new Error("bytes after IEND");
  if (chunks[0] !== "IHDR" || chunks.at(-1) !== "IEND") throw new Error(`chunk order ${chunks.join(",")}`);
  if (header === undefined) throw new Error("no IHDR");
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const [depth, colorType = 0, compression, filter, interlace] = [...header.subarray(8, 13)];
  if (depth !== 8 || compression !== 0 || filter !== 0 || interlace !== 0)
    throw new Error(`unsupported IHDR ${[...header.subarray(8)]}`);
  const channels = colorType === 3 ? 1 : colorType === 2 ? 3 : colorType === 6 ? 4 : 0;
  if (channels === 0) throw new Error(`unsupported colour type ${colorType}`);
  if (colorType === 3 && palette === undefined) throw new Error("palette image without PLTE");

  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  if (raw.length !== (stride + 1) * height) throw new Error(`IDAT holds ${raw.length} bytes`);
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const type = raw[y * (stride + 1)]!;
    for (let i = 0; i < stride; i++) {
      const x = raw[y * (stride + 1) + 1 + i]!;
      const a = i >= channels ? pixels[y * stride + i - channels]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + i]! : 0;
      const c = y > 0 && i >= channels ? pixels[(y - 1) * stride + i - channels]! : 0;
      const predictor = [0, a, b, (a + b) >> 1, paeth(a, b, c)][type];
      if (predictor === undefined) throw new Error(`filter type ${type}`);
      pixels[y * stride + i] = (x + predictor) & 0xff;
    }
  }
  const packed = new Uint32Array(width * height);
  for (let p = 0; p < packed.length; p++) {
    const i = p * channels;
    let color: number;
    if (colorType === 3) {
      const index = pixels[i]!;
      if (index * 3 + 2 >= palette!.length) throw new Error(`index ${index} outside the palette`);
      color = (palette![index * 3]! << 16) | (palette![index * 3 + 1]! << 8) | palette![index * 3 + 2]!;
    } else color = (pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!;
    packed[p] = color;
  }
  return {
    width,
    height,
    colorType,
    chunks,
    packed,
    rgb(x, y) {
      const c = packed[y * width + x]!;
      return [(c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff];
    },
  };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Vertical runs of one colour: per column, each stretch of consecutive pixels of that colour. */
export function runsOf(
  png: DecodedPng,
  color: readonly [number, number, number],
  columns: { from: number; to: number } = { from: 0, to: png.width },
): { x: number; top: number; height: number }[] {
  const wanted = pack(color);
  const runs: { x: number; top: number; height: number }[] = [];
  for (let x = columns.from; x < columns.to; x++) {
    let top = -1;
    for (let y = 0; y <= png.height; y++) {
      const same = y < png.height && png.packed[y * png.width + x] === wanted;
      if (same && top < 0) top = y;
      if (!same && top >= 0) {
        runs.push({ x, top, height: y - top });
        top = -1;
      }
    }
  }
  return runs;
}

export function pack([r, g, b]: readonly [number, number, number]): number {
  return (r << 16) | (g << 8) | b;
}

/** How many pixels have this colour. */
export function countColor(png: DecodedPng, color: readonly [number, number, number]): number {
  const wanted = pack(color);
  let n = 0;
  for (const c of png.packed) if (c === wanted) n++;
  return n;
}
