// Profiling helper (not a benchmark): one server of run-http.js under the V8
// CPU profiler while wrk loads it (50 connections).
//   node http-profile.js node rc [seconds]
//   node prof-lines.cjs results/prof/http-node-rc.cpuprofile
import { execFileSync, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const [framework = 'node', variant = 'rc', seconds = '4'] = process.argv.slice(2);
const dir = fileURLToPath(new URL('./results/prof/', import.meta.url));
const child = fork(fileURLToPath(new URL('./http-server.js', import.meta.url)), [framework, variant], {
  execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=http-${framework}-${variant}.cpuprofile`],
});
const exited = new Promise((resolve) => child.once('exit', resolve));
const { port } = await new Promise((resolve) => child.once('message', resolve));
const out = execFileSync('wrk', ['-t1', '-c50', `-d${seconds}s`, `http://127.0.0.1:${port}/`], { encoding: 'utf8', timeout: (Number(seconds) + 20) * 1000 });
console.log(out.split('\n').filter((l) => /Requests\/sec|Latency/.test(l)).join('\n'));
child.disconnect();
await exited;
console.log(`profile: results/prof/http-${framework}-${variant}.cpuprofile`);
