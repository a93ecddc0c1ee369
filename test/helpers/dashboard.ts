/**
 * The demo site and a scripted Chromium to look at its live panel, shared by
 * the dashboard test and `npm run screenshots`. No ava import: a script uses
 * it too. The demo runs as `npm start` runs it (a cluster primary and two
 * workers, in a process group of its own), on a free port, with a fresh
 * data directory; {@link DemoSite.stop} ends the group and removes the directory.
 *
 * Unlike the render tests' browser (chromium.ts), this one runs scripts:
 * the panel is the page's own script. It still resolves no host name, so
 * nothing but the loopback demo is reached.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { chromiumPath } from './chromium.ts';
import { LineChild } from './children.ts';
import { example, exampleEnv, repoRoot } from './examples.ts';

const bannerLine = /^koa-buffer demo: (http:\/\/127\.0\.0\.1:\d+)\/ {2}\(2 workers: pid (\d+), (\d+)\)$/;

/** A running demo. */
export interface DemoSite {
  /** e.g. http://127.0.0.1:41234 */
  base: string;
  dataDir: string;
  /** The workers' pids, as the banner printed them. */
  workers: number[];
  child: LineChild;
  /** SIGTERM to the primary (it stops the workers), SIGKILL to the group if that fails; removes the data directory. */
  stop(): Promise<void>;
}

/** Starts the demo (examples/demo/server.ts) on a free port with a fresh data directory. */
export async function startDemo(): Promise<DemoSite> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-dashboard-'));
  const child = new LineChild(
    process.execPath,
    ['--import', 'tsx/esm', example('demo/server.ts')],
    { env: exampleEnv({ KOA_BUFFER_DEMO_DIR: dataDir }), cwd: repoRoot, group: true },
    60_000,
  );
  const stop = async (): Promise<void> => {
    try {
      const stopped = child.kill('SIGTERM');
      const late = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 20_000).unref());
      if ((await Promise.race([stopped, late])) === 'late') await child.kill('SIGKILL');
    } finally {
      child.killGroup();
      rmSync(dataDir, { recursive: true, force: true });
    }
  };
  try {
    const match = bannerLine.exec(await child.waitForLine((line) => bannerLine.test(line), 'the demo banner'))!;
    return { base: match[1]!, dataDir, workers: [Number(match[2]), Number(match[3])], child, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Chromium with scripts on, resolving no host name (the demo is reached by its IP address). */
export function launchScriptedChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
    timeout: 60_000,
  });
}

/** Opens the index and waits until the panel has fetched every page. */
export async function openDashboard(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/`, { waitUntil: 'load', timeout: 60_000 });
  await page.waitForSelector('#dashboard[data-state="done"]', { timeout: 60_000 });
}

/** Clicks the stampede button and waits for its verdict. */
export async function runStampede(page: Page): Promise<void> {
  await page.click('button[data-action="stampede"]');
  await page.waitForSelector('[data-result="stampede"][data-state="done"]', { timeout: 60_000 });
}
