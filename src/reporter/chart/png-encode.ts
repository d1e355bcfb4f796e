import { deflateSync } from "node:zlib";

/**
 * A PNG encoder with no native dependency: the signature, IHDR, (PLTE,) one zlib-deflated IDAT and IEND,
 * each chunk with its CRC-32 (PNG spec §5, https://www.w3.org/TR/png-3/). Scanlines use filter type 0
 * (none): charts are flat colours that deflate well as they are, and the spec recommends no filter for
 * palette images.
 */

/** One palette index per pixel, row by row; palette entries are [r, g, b]. */
export interface IndexedImage {
  kind: "indexed";
  width: number;
  height: number;
  palette: readonly (readonly [number, number, number])[];
  pixels: Uint8Array;
}

/** Four bytes (r, g, b, a) per pixel, row by row. */
export interface RgbaImage {
  kind: "rgba";
  width: number;
  height: number;
  pixels: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const COLOR_TYPE = { indexed: 3, rgba: 6 } as const;

export function encodePng(image: IndexedImage | RgbaImage): Buffer {
  const { width, height } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
    throw new RangeError(`a PNG needs a positive whole size, not ${width}×${height}`);
  const bytesPerPixel = image.kind === "rgba" ? 4 : 1;
  if (image.pixels.length !== width * height * bytesPerPixel)
    throw new RangeError(
      `${width}×${height} ${image.kind} pixels need ${width * height * bytesPerPixel} bytes`,
    );

  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = COLOR_TYPE[image.kind];
  ihdr[10] = 0; // compression: deflate
  ihdr[11] = 0; // filter method 0
  ihdr[12] = 0; // no interlace

  const stride = width * bytesPerPixel;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (stride + 1)] = 0; // filter: none
    raw.set(image.pixels.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  }

  const chunks = [chunk("IHDR", ihdr)];
  if (image.kind === "indexed") {
    if (image.palette.length < 1 || image.palette.length > 256)
      throw new RangeError(`a palette holds 1 to 256 colours, not ${image.palette.length}`);
    let max = 0;
    for (const p of image.pixels) max = Math.max(max, p);
    if (max >= image.palette.length) throw new RangeError(`pixel index ${max} is not in the palette`);
    chunks.push(chunk("PLTE", Buffer.from(image.palette.flatMap((rgb) => [...rgb]))));
  }
  chunks.push(chunk("IDAT", deflateSync(raw, { level: 9 })), chunk("IEND", Buffer.alloc(0)));
  return Buffer.concat([SIGNATURE, ...chunks]);
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "latin1");
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 as PNG (and zlib, and gzip) compute it: reflected polynomial 0xEDB88320. */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = (CRC_TABLE[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
