/** Where things are in this repository, for tests that spawn, pack or read files. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (with a trailing separator). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The library package, `ratecontract`. */
export const LIB_DIR = join(ROOT, 'packages', 'ratecontract');
/** The servers and tools, `@ratecontract/cli`. */
export const CLI_DIR = join(ROOT, 'packages', 'cli');
/** The built `ratecontract` command, as `npx ratecontract` runs it. */
export const CLI_MAIN = join(CLI_DIR, 'dist', 'cli', 'main.js');
/** The gRPC protos `ratecontract rls` serves. */
export const PROTO_DIR = join(CLI_DIR, 'proto');
