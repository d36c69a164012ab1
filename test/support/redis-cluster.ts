import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pollUntil } from './poll.js';
import { freePort, stopProcess } from './processes.js';

/** Whether redis-server and redis-cli are on PATH (a cluster test is skipped without them). */
export const redisClusterToolsMissing = (): string | undefined =>
  ['redis-server', 'redis-cli'].find((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).error !== undefined);

export interface ClusterNode {
  port: number;
  child: ChildProcess;
}

/** A Redis Cluster of the test's own: 3 masters, a replica each, nothing kept on disk but the node files in a temp dir. */
export interface RedisCluster {
  /** REDIS_URL naming every node. */
  url: string;
  nodes: ClusterNode[];
  /** The port of the master now serving `key`'s slot, as a live node sees it. */
  masterOf(key: string): Promise<number>;
  /** The keys matching `pattern` on each live master, by its port. */
  keysByMaster(pattern: string): Promise<Map<number, string[]>>;
  /** Kills a node (SIGKILL, as a crash). */
  kill(port: number): Promise<void>;
  /** Starts a killed node again, empty but with its cluster configuration (its slots, its place as master or replica). */
  restart(port: number): Promise<void>;
  /** Waits until every live node says cluster_state:fail (slots no live master serves). */
  waitUntilDown(timeoutMs?: number): Promise<void>;
  /** Waits until every live node says cluster_state:ok and its slots are all served by live masters. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** Stops every node it started and removes its temp dir. */
  destroy(): Promise<void>;
}

export function redisCli(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`redis-cli ${args.join(' ')}: ${error.message} ${stderr}`)) : resolve(stdout),
    );
  });
}

async function waitForPing(port: number): Promise<void> {
  const pong = await pollUntil(
    () => redisCli(port, 'ping').catch(() => ''),
    (answer) => answer.trim() === 'PONG',
    { timeoutMs: 10_000 },
  );
  if (pong.trim() !== 'PONG') throw new Error(`redis-server did not start on port ${port}`);
}

/** Masters that live nodes agree on, with their slot ranges, from CLUSTER NODES. */
function mastersIn(nodesText: string): Array<{ port: number; ranges: Array<[number, number]>; failed: boolean }> {
  return nodesText
    .trim()
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => fields[2]?.split(',').includes('master'))
    .map((fields) => ({
      port: Number(/:(\d+)@/.exec(fields[1]!)?.[1]),
      failed: /fail/.test(fields[2]!),
      ranges: fields.slice(8).flatMap((slot): Array<[number, number]> => {
        if (slot.startsWith('[')) return [];
        const [from, to = from] = slot.split('-').map(Number);
        return [[from!, to!]];
      }),
    }));
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'redis-cluster-'));
  const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const serve = (port: number) =>
    spawn(
      'redis-server',
      [
        ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir],
        ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '1000'],
        ...['--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      ],
      { stdio: 'ignore' },
    );
  const nodes: ClusterNode[] = ports.map((port) => ({ port, child: serve(port) }));
  const killed = new Set<number>();
  const live = () => nodes.filter((node) => !killed.has(node.port));
  const cluster: RedisCluster = {
    url: `redis+cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`,
    nodes,
    async masterOf(key) {
      const slot = Number(await redisCli(live()[0]!.port, 'cluster', 'keyslot', key));
      const masters = mastersIn(await redisCli(live()[0]!.port, 'cluster', 'nodes'));
      const master = masters.find(({ failed, ranges }) => !failed && ranges.some(([from, to]) => slot >= from && slot <= to));
      if (!master) throw new Error(`no master serves slot ${slot}`);
      return master.port;
    },
    async keysByMaster(pattern) {
      const masters = mastersIn(await redisCli(live()[0]!.port, 'cluster', 'nodes')).filter(
        ({ port, failed }) => !failed && !killed.has(port),
      );
      const keys = new Map<number, string[]>();
      for (const { port } of masters) keys.set(port, (await redisCli(port, '--scan', '--pattern', pattern)).split('\n').filter(Boolean));
      return keys;
    },
    async kill(port) {
      killed.add(port);
      await stopProcess(nodes.find((node) => node.port === port)!.child, 'SIGKILL');
    },
    async restart(port) {
      const node = nodes.find((candidate) => candidate.port === port)!;
      node.child = serve(port);
      await waitForPing(port);
      killed.delete(port);
    },
    async waitUntilDown(timeoutMs = 30_000) {
      const down = async () => {
        for (const { port } of live())
          if (!(await redisCli(port, 'cluster', 'info').catch(() => '')).includes('cluster_state:fail')) return false;
        return true;
      };
      if (!(await pollUntil(down, (done) => done, { timeoutMs, intervalMs: 200 }))) throw new Error('the Redis Cluster did not go down');
    },
    async waitUntilOk(timeoutMs = 30_000) {
      const healthy = async () => {
        for (const { port } of live()) {
          const info = await redisCli(port, 'cluster', 'info').catch(() => '');
          if (!info.includes('cluster_state:ok')) return false;
          const masters = mastersIn(await redisCli(port, 'cluster', 'nodes').catch(() => ''));
          const served = masters
            .filter(({ port: master, failed }) => !failed && !killed.has(master))
            .flatMap(({ ranges }) => ranges)
            .reduce((sum, [from, to]) => sum + to - from + 1, 0);
          if (served !== 16_384) return false;
        }
        return true;
      };
      if (!(await pollUntil(healthy, (ok) => ok, { timeoutMs, intervalMs: 200 }))) throw new Error('the Redis Cluster did not become ok');
    },
    async destroy() {
      for (const node of nodes) await stopProcess(node.child, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(ports.map(waitForPing));
    await redisCli(
      ports[0]!,
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    );
    await cluster.waitUntilOk();
    return cluster;
  } catch (error) {
    await cluster.destroy();
    throw error;
  }
}
