export {
  describeStoreConformance,
  runStoreConformance,
  runConformanceCase,
  ConformanceError,
  CONFORMANCE_START,
  type StoreConformanceOptions,
  type TestHarness,
  type ConformanceReport,
} from './conformance.js';
export { conformanceCases, type ConformanceCase, type ConformanceStep, type ConformanceOp } from './cases.js';
export { ReferenceStore } from './reference-store.js';
