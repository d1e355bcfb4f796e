import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";

/** Quiet time after the last event before the file is read: an editor's save is several events. */
export const SETTLE_MS = 300;

export interface ConfigFileWatch {
  stop(): void;
}

/**
 * Calls `changed` when the config file may have changed, once its writes have settled (SETTLE_MS without
 * another event). It watches the file's directory, because editors save by writing another file and
 * renaming it over the old one (the old file's watch then sees nothing more), and Kubernetes swaps a
 * ConfigMap's files by renaming a `..data` link; and the file itself, watched again after each change.
 * Other files of the directory are ignored. `changed` reads the file and compares its bytes: an event
 * that changed nothing costs one read. Throws when the directory cannot be watched (it does not exist,
 * or the system's inotify watches are used up).
 */
export function watchConfigFile(path: string, changed: () => void, settleMs = SETTLE_MS): ConfigFileWatch {
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  let fileWatch: FSWatcher | undefined;
  const poke = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      watchFile();
      changed();
    }, settleMs);
    timer.unref();
  };
  const watchFile = () => {
    fileWatch?.close();
    fileWatch = undefined;
    try {
      fileWatch = watch(path, { persistent: false }, poke);
      // a file renamed away or deleted ends its watch; the directory's goes on
      fileWatch.on("error", () => fileWatch?.close());
    } catch {
      // no file there now (between an editor's delete and rename): the directory's watch sees it come
    }
  };
  const dirWatch = watch(dirname(path), { persistent: false }, (_event, file) => {
    const changedName = file?.toString();
    if (changedName === undefined || changedName === name || changedName.startsWith("..")) poke();
  });
  dirWatch.on("error", () => undefined);
  watchFile();
  return {
    stop() {
      clearTimeout(timer);
      dirWatch.close();
      fileWatch?.close();
    },
  };
}
