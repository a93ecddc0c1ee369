/** Whether a program is on PATH: the test and fuzz runners skip what needs a missing one. */
import { execFileSync } from 'node:child_process';

export function have(program) {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
