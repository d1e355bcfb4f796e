const GIB = 1024 ** 3;

/**
 * GPU and RAM sizes, as nvidia-smi and `free` count them: binary units, one decimal ("95.6 GiB", "2.0 TiB",
 * "6.6 MiB" for the bench's scaled weights, never "0.0 GiB").
 */
export function formatGiB(bytes: number): string {
  if (bytes >= 1024 * GIB) return `${(bytes / (1024 * GIB)).toFixed(1)} TiB`;
  if (bytes < GIB / 10) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / GIB).toFixed(1)} GiB`;
}

/** Download and disk sizes, as the Hub and `df -H` count them: decimal units ("223 GB", "7.1 TB", "940 MB"). */
export function formatGB(bytes: number): string {
  const units: [number, string][] = [
    [1e12, "TB"],
    [1e9, "GB"],
    [1e6, "MB"],
    [1e3, "kB"],
  ];
  for (const [size, unit] of units) {
    if (bytes >= size) {
      const value = bytes / size;
      return `${value >= 100 ? Math.round(value) : value.toFixed(1)} ${unit}`;
    }
  }
  return `${bytes} B`;
}

export const GiB = GIB;
