// The protocol ceiling for bench/rls.js: a bare @grpc/grpc-js server on the
// shipped protos whose ShouldRateLimit answers OK for every descriptor and
// does nothing else. Prints "port N" on stdout.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'cli', 'proto');
const def = protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto'], { keepCase: true, longs: Number, enums: String, defaults: false, arrays: true, oneofs: true, includeDirs: [PROTO] });
const pkg = grpc.loadPackageDefinition(def);
const server = new grpc.Server();
server.addService(pkg.envoy.service.ratelimit.v3.RateLimitService.service, {
  ShouldRateLimit: (call, callback) => callback(null, { overall_code: 'OK', statuses: call.request.descriptors.map(() => ({ code: 'OK' })) }),
});
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`port ${port}\n`);
});
process.on('SIGTERM', () => server.forceShutdown());
