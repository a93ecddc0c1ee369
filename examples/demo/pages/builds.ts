/**
 * Reads the report's build log: one line per run of the report's action,
 * `<ISO time> pid=<worker pid> <url>`, appended by whichever worker built it
 * (report.ts). The log is the count of real builds, whatever the responses say.
 */
import { readFile } from 'node:fs/promises';

/** One build of a report URL. */
export interface Build {
  /** When the build started (ISO 8601). */
  at: string;
  /** The pid of the worker that built it. */
  worker: number;
}

/**
 * The builds of one URL, oldest first (none when the log does not exist yet).
 *
 * @param buildLog - the log file
 * @param url - the request URL, path and query, as the action saw it
 */
export async function readBuilds(buildLog: string, url: string): Promise<Build[]> {
  let text: string;
  try {
    text = await readFile(buildLog, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const builds: Build[] = [];
  for (const line of text.split('\n')) {
    const match = /^(\S+) pid=(\d+) (.*)$/.exec(line);
    if (match && match[3] === url) builds.push({ at: match[1]!, worker: Number(match[2]) });
  }
  return builds;
}
