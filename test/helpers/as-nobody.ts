/**
 * Dropping root in a test. Root writes to any directory whatever its mode,
 * so a test of a directory this process cannot write to runs the attempt in
 * a child process started as nobody (uid and gid 65534) when the suite runs
 * as root, and directly otherwise.
 */
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';

/** The uid and gid of nobody. */
export const nobody = 65534;

/** True when the suite runs as root, whom permission bits do not stop. */
export function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Spawn options that start a child as nobody, with a HOME it may use. */
export function asNobody(home: string = tmpdir()): { uid: number; gid: number; env: NodeJS.ProcessEnv } {
  return { uid: nobody, gid: nobody, env: { ...process.env, HOME: home } };
}

/** True when nobody can read `path`: false for a checkout under /root, where a child as nobody cannot run it. */
export function nobodyCanRead(path: string): boolean {
  return (
    spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(path)})`], {
      ...asNobody(),
      timeout: 30_000,
    }).status === 0
  );
}
