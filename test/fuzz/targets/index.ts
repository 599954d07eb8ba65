/** Every in-process fuzz target (the admin endpoints are driven over HTTP: test/fuzz/admin.test.ts). */
import type { FuzzTarget } from '../harness.js';
import { clientFieldsTarget } from './client-fields.js';
import { contractTarget } from './contract.js';
import { descriptorsTarget } from './descriptors.js';
import { durationTarget } from './duration.js';
import { forwardedTarget } from './forwarded.js';
import { logLinesTarget } from './log-lines.js';
import { rlsConfigTarget } from './rls-config.js';

export const TARGETS: readonly FuzzTarget[] = [durationTarget, contractTarget, rlsConfigTarget, logLinesTarget, forwardedTarget, clientFieldsTarget, descriptorsTarget];
