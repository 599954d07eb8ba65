export { MemoryStore, memoryStore, type MemoryStoreOptions } from './memory-store.js';
