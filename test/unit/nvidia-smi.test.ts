import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GPU_QUERY_FIELDS, nvidiaSmiError, parseGpuQuery } from "../../src/gpu/nvidia-smi.ts";

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/gpu-host/h200-1gpu/${name}`, import.meta.url), "utf8");

describe("parseGpuQuery on the real H200 captures", () => {
  it("asks for exactly the fields the capture was taken with", () => {
    const readme = readFileSync(new URL("../fixtures/gpu-host/README.md", import.meta.url), "utf8");
    expect(readme).toContain(`--query-gpu=${GPU_QUERY_FIELDS.join(",")} --format=csv,noheader,nounits`);
  });

  it("reads an idle H200", () => {
    const [gpu, ...rest] = parseGpuQuery(fixture("nvidia-smi-query.csv"));
    expect(rest).toEqual([]);
    expect(gpu).toEqual({
      index: 0,
      name: "NVIDIA H200",
      uuid: "GPU-8fe967e7-edb7-eb37-e78a-57cc733ec9e5",
      memoryTotalMiB: 143771,
      memoryUsedMiB: 0,
      memoryFreeMiB: 143156,
      utilizationPct: 0,
      temperatureC: 33,
      powerDrawW: 80.76,
      computeCapability: { major: 9, minor: 0 },
      driverVersion: "580.159.04",
    });
  });

  it("reads a busy H200", () => {
    const [gpu] = parseGpuQuery(fixture("nvidia-smi-query-busy.csv"));
    expect(gpu).toMatchObject({ memoryUsedMiB: 20305, utilizationPct: 100, powerDrawW: 680.05 });
  });

  it("treats [N/A] and [Not Supported] as unknown, not as zero", () => {
    const line =
      "3, NVIDIA RTX PRO 6000 Blackwell Server Edition, GPU-x, 97887, 10, 97000, [N/A], [Not Supported], [N/A], 12.0, 580.159.04";
    const [gpu] = parseGpuQuery(line);
    expect(gpu).toMatchObject({ index: 3, utilizationPct: null, temperatureC: null, powerDrawW: null });
    expect(gpu?.computeCapability).toEqual({ major: 12, minor: 0 });
  });

  it("refuses output of another shape with a clear error", () => {
    expect(() => parseGpuQuery("0, NVIDIA H200, 143771")).toThrow(/has 3 fields, expected 11/);
    expect(() => parseGpuQuery(fixture("nvidia-smi-query.csv").replace("9.0", "sm90"))).toThrow(
      /compute capability/,
    );
  });

  it("explains nvidia-smi's own failures", () => {
    const badField = fixture("nvidia-smi-bad-field.txt").split("\n")[0]!;
    expect(nvidiaSmiError(2, badField, "").message).toContain('Field "bogus.field" is not a valid field');
    expect(nvidiaSmiError(127, "", "").message).toMatch(/not installed/);
    expect(nvidiaSmiError(9, "NVIDIA-SMI has failed", "").fix).toMatch(/driver/);
  });
});
