/** systemctl enable / disable: the `[Install]` symlinks of a unit in the sandbox's /etc/systemd/system. */
import { mkdirSync, symlinkSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { verbFails } from "./systemctl-jobs.mjs";
import { enablementLinks, existingLinks, reloadAll, resolveUnit, unitFilePath } from "./units.mjs";

export function enableUnits(ctx, names) {
  const { root, opts, err } = ctx;
  let code = 0;
  const toStart = [];
  for (const name of names) {
    const { unit } = resolveUnit(root, name);
    if (unit === null) {
      err(`Failed to enable unit: Unit file ${name} does not exist.\n`);
      return { code: 1, toStart: [] };
    }
    if (verbFails(ctx, "enable", name)) {
      err(`Failed to enable unit: Access denied\n`);
      return { code: 1, toStart: [] };
    }
    if (!unit.hasInstall) {
      err(
        "The unit files have no installation config (WantedBy=, RequiredBy=, UpheldBy=,\n" +
          "Also=, or Alias= settings in the [Install] section, and DefaultInstance= for\n" +
          "template units). This means they are not meant to be enabled or disabled using systemctl.\n",
      );
    }
    for (const link of enablementLinks(root, unit)) {
      if (existingLinks(root, name).includes(link)) continue;
      mkdirSync(dirname(link), { recursive: true });
      try {
        symlinkSync(unitFilePath(root, name), link);
        err(`Created symlink ${link} → ${unitFilePath(root, name)}.\n`);
      } catch (error) {
        if (error?.code !== "EEXIST") {
          err(`Failed to enable unit: ${error.message}\n`);
          code = 1;
        }
      }
    }
    toStart.push(name);
  }
  if (!opts.noReload) reloadAll(root);
  return { code, toStart };
}

export function disableUnits(ctx, names) {
  const { root, opts, err } = ctx;
  const done = [];
  for (const name of names) {
    const { unit } = resolveUnit(root, name, { recordFirstLoad: false });
    if (unit === null && existingLinks(root, name).length === 0) {
      err(`Failed to disable unit: Unit file ${name} does not exist.\n`);
      return { code: 1, done: [] };
    }
    if (verbFails(ctx, "disable", name)) {
      err(`Failed to disable unit: Access denied\n`);
      return { code: 1, done: [] };
    }
    for (const link of existingLinks(root, name)) {
      try {
        unlinkSync(link);
        err(`Removed "${link}".\n`);
      } catch {
        // a concurrent disable removed it
      }
    }
    done.push(name);
  }
  if (!opts.noReload) reloadAll(root);
  return { code: 0, done };
}
