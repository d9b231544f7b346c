/**
 * CPU time of processes and threads from Linux's /proc (100 ticks a second), for CPU per flow by
 * process: the bench process, the Temporal server, PostgreSQL and its backends, the simulator.
 */
import fs from 'node:fs';

/** [ppid, utime+stime in ms] of a process, or of one of its threads with `tid`. */
function procStat(pid: number, tid?: number): [number, number] | undefined {
  try {
    const stat = fs.readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return [Number(f[1]), (Number(f[11]) + Number(f[12])) * 10];
  } catch {
    return undefined;
  }
}

/**
 * CPU ms of a process and, with `children`, of its direct children too (PostgreSQL's backends);
 * with `tid`, of that one thread (the main thread's id is the pid).
 */
export function procCpuMs(pid: number | undefined, children = false, tid?: number): number {
  if (!pid) return Number.NaN;
  let total = procStat(pid, tid)?.[1] ?? Number.NaN;
  if (children) {
    for (const e of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      const st = procStat(Number(e));
      if (st && st[0] === pid) total += st[1];
    }
  }
  return total;
}

/** CPU ms of each thread of a process, by thread name (`comm`: the SDK core's `tokio-runtime-w`, libuv's and V8's), node's own threads one by one (the main thread, the workflow threads, the loader's). */
export function threadCpuMsByName(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let name: string;
    try {
      name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const ms = procStat(pid, Number(tid))?.[1];
    const key = Number(tid) === pid ? `${name} (main)` : name === 'node' ? `node (thread ${tid})` : name;
    if (ms !== undefined) out.set(key, (out.get(key) ?? 0) + ms);
  }
  return out;
}
