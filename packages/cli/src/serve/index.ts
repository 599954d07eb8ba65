export { startService, type ServiceOptions, type RunningService } from './service.js';
export { ReverseProxy, type ReverseProxyOptions } from './proxy.js';
export { identifyFrom, type Identify } from './identify.js';
export { demoHandler } from './demo.js';
export { BANNER_COLUMNS, contractTable, demoExamples, formatTable, wrapText } from './banner.js';
