import { ADVANCE, glyph, textWidth } from "./bitmap-font.ts";
import { encodePng } from "./png-encode.ts";

/**
 * A tiny raster canvas over a fixed palette: filled rectangles, lines of one pixel and bitmap text.
 * No anti-aliasing, so an indexed PNG holds it exactly and stays small.
 */
export class Canvas {
  readonly pixels: Uint8Array;

  constructor(
    readonly width: number,
    readonly height: number,
    readonly palette: readonly (readonly [number, number, number])[],
    background = 0,
  ) {
    this.pixels = new Uint8Array(width * height).fill(background);
  }

  /** Fills the rectangle, clipped to the canvas (x, y: top left; coordinates are rounded). */
  fillRect(x: number, y: number, w: number, h: number, color: number): void {
    const x0 = Math.max(0, Math.round(x));
    const y0 = Math.max(0, Math.round(y));
    const x1 = Math.min(this.width, Math.round(x + w));
    const y1 = Math.min(this.height, Math.round(y + h));
    for (let row = y0; row < y1; row++) this.pixels.fill(color, row * this.width + x0, row * this.width + x1);
  }

  hline(x: number, y: number, w: number, color: number): void {
    this.fillRect(x, y, w, 1, color);
  }

  vline(x: number, y: number, h: number, color: number): void {
    this.fillRect(x, y, 1, h, color);
  }

  /** Draws text with its top left at (x, y), each font pixel a scale×scale square. */
  text(x: number, y: number, text: string, color: number, scale = 1): void {
    let left = Math.round(x);
    for (const char of text) {
      glyph(char).forEach((row, r) => {
        row.forEach((on, c) => {
          if (on) this.fillRect(left + c * scale, Math.round(y) + r * scale, scale, scale, color);
        });
      });
      left += ADVANCE * scale;
    }
  }

  /** Draws text centred on x. */
  textCentered(x: number, y: number, text: string, color: number, scale = 1): void {
    this.text(x - textWidth(text, scale) / 2, y, text, color, scale);
  }

  /** Draws text ending at x. */
  textRight(x: number, y: number, text: string, color: number, scale = 1): void {
    this.text(x - textWidth(text, scale), y, text, color, scale);
  }

  toPng(): Buffer {
    return encodePng({
      kind: "indexed",
      width: this.width,
      height: this.height,
      palette: this.palette,
      pixels: this.pixels,
    });
  }
}
