import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { dirname, join } from 'node:path';

/** Quiet time after the last change in the folder before the config is read again, ms. */
export const WATCH_DEBOUNCE_MS = 100;
/** Files above this size are fingerprinted by size and time, not read. Config files are far smaller. */
const MAX_HASHED_BYTES = 4 * 1024 * 1024;

/** Options of `watchConfig`. */
export interface WatchConfigOptions {
  /** Called when what the config path holds has changed (after `debounceMs` of quiet). */
  readonly onChange: () => void;
  /** The watcher could not start or failed; the server keeps its config, and SIGHUP still reloads. */
  readonly onError: (error: Error) => void;
  /** Default `WATCH_DEBOUNCE_MS`. */
  readonly debounceMs?: number | undefined;
}

/** A running watcher. */
export interface ConfigWatcher {
  close(): void;
}

/** What the config path holds now: the bytes of the file (or of every file of the directory), through symlinks. */
function fingerprint(path: string): string {
  const hash = createHash('sha256');
  const add = (file: string): void => {
    try {
      const st = statSync(file);
      if (!st.isFile()) return;
      if (st.size > MAX_HASHED_BYTES) hash.update(`${file}\0${st.size}\0${st.mtimeMs}\0${st.ino}\0`);
      else hash.update(`${file}\0`).update(readFileSync(file)).update('\0');
    } catch (error) {
      hash.update(`${file}\0${(error as NodeJS.ErrnoException).code ?? 'error'}\0`);
    }
  };
  let dir = false;
  try {
    dir = statSync(path).isDirectory();
  } catch {
    // Missing (an editor between delete and write): its own fingerprint, read below as an error code.
  }
  if (!dir) add(path);
  else {
    let names: string[] = [];
    try {
      names = readdirSync(path).sort();
    } catch (error) {
      hash.update(`${(error as NodeJS.ErrnoException).code ?? 'error'}\0`);
    }
    // Hidden names are the swap machinery (a ConfigMap's `..data`), not config files.
    for (const name of names) if (!name.startsWith('.')) add(join(path, name));
  }
  return hash.digest('hex');
}

/**
 * The one watcher policy of every server: **watch the folder, compare what
 * the config reads.** A config file's folder (or a config directory itself)
 * is watched, never the file, because editors and config managers replace a
 * file by writing a new one and renaming it over the old (vim, VS Code,
 * `sed -i`, Ansible), and a Kubernetes ConfigMap swaps a `..data` symlink:
 * a watch on the old file would see nothing after the first such save. Any
 * event in the folder starts a quiet period of `debounceMs`; then the bytes
 * the config path holds (through symlinks; for a directory, every
 * non-hidden file in it) are hashed, and `onChange` is called only when they
 * differ from the last seen. So a save in several steps reloads once, a
 * rename over the file or a symlink swap reloads, and other files changing
 * in the same folder (a swap file, a log) reload nothing.
 */
export function watchConfig(path: string, options: WatchConfigOptions): ConfigWatcher {
  const debounceMs = options.debounceMs ?? WATCH_DEBOUNCE_MS;
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    // A missing file: its folder is watched, and the file is read when it comes.
  }
  const folder = isDir ? path : dirname(path);
  let last = fingerprint(path);
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const check = (): void => {
    timer = undefined;
    if (closed) return;
    const now = fingerprint(path);
    if (now === last) return;
    last = now;
    options.onChange();
  };
  let watcher: FSWatcher;
  try {
    watcher = watch(folder, { persistent: false }, () => {
      clearTimeout(timer);
      timer = setTimeout(check, debounceMs);
    });
  } catch (error) {
    options.onError(error instanceof Error ? error : new Error(String(error)));
    return { close: () => undefined };
  }
  watcher.on('error', (error) => options.onError(error));
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      watcher.close();
    },
  };
}
