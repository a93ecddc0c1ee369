/* global document */
/**
 * The index's live panel, run by the browser: requests each demo URL the
 * server lists in #dashboard-config, reads what came back (headers, and the
 * sizes from Resource Timing), and draws it; polls the server's counters of
 * both workers every second and draws those. Plain DOM, no framework.
 * The panel's markup and the list of requests: examples/demo/pages/dashboard.ts.
 */

const panel = document.getElementById('dashboard');
const config = JSON.parse(document.getElementById('dashboard-config').textContent);
// Each X-Cache verdict its own colour: a stale answer is neither a fresh hit nor a build.
const colours = { MISS: '#e07b00', HIT: '#2e7d32', STALE: '#1565c0', none: '#757575' };

// Two hundred requests a press would overflow the default buffer of 250 entries.
performance.setResourceTimingBufferSize(2000);
// The counters' poll adds an entry a second, so a page left open fills any buffer: empty it then.
// An entry is read within moments of its request, so only a request under way at that instant loses its sizes.
performance.addEventListener('resourcetimingbufferfull', () => performance.clearResourceTimings());

/** Text made safe for HTML. */
function esc(value) {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A value new to each press, so a URL holding it is a key no cache has seen. */
function fresh() {
  return `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

/** 12,345 B, or 12.1 KiB. */
function bytes(n) {
  if (n === undefined) return '–';
  return n < 10240 ? `${n.toLocaleString('en-US')} B` : `${(n / 1024).toFixed(1)} KiB`;
}

/**
 * Fetch options that make the browser ask the server every time:
 * `cache: 'no-store'` keeps the browser's own cache out. It also sends
 * `Cache-Control: no-cache`, which koa-buffer ignores by default
 * (`cacheRequestNoCache: 'ignore'`, as nginx and Varnish do), so the server's
 * cache still answers and the build counts stay honest.
 */
const askServer = { cache: 'no-store' };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const claimed = new Set();

/**
 * The Resource Timing entry of a fetch started at `started`, not already
 * claimed by another request to the same URL. The entry is queued when the
 * body has been read, sometimes a moment later: look a few times.
 */
async function timingOf(url, started) {
  for (let attempt = 0; attempt < 40; attempt++) {
    const entry = performance
      .getEntriesByName(url, 'resource')
      .find((e) => e.startTime >= started - 1 && !claimed.has(e));
    if (entry) {
      claimed.add(entry);
      return entry;
    }
    await sleep(25);
  }
  return undefined;
}

/** Makes one request and returns what the panel shows of it. */
async function measure(request, path) {
  const url = new URL(path, document.baseURI).href;
  const started = performance.now();
  try {
    const response = await fetch(url, { method: request.method ?? 'GET', ...askServer });
    await response.arrayBuffer();
    const ms = performance.now() - started;
    const timing = await timingOf(url, started);
    return {
      label: request.label,
      path,
      status: response.status,
      encoding: response.headers.get('Content-Encoding') ?? '',
      wire: timing?.encodedBodySize,
      page: timing?.decodedBodySize,
      transfer: timing?.transferSize,
      xCache: response.headers.get('X-Cache') ?? '',
      extra: config.extraHeaders.map((name) => response.headers.get(name) ?? ''),
      cacheStatus: response.headers.get('Cache-Status') ?? '',
      worker: response.headers.get('X-Worker') ?? '',
      ms,
    };
  } catch (error) {
    return { label: request.label, path, status: 0, error: String(error), ms: performance.now() - started };
  }
}

/** The table of requests. */
function table(rows) {
  // An extra header gets its column only when some response carried it.
  const extras = config.extraHeaders.map((name, i) => [name, i]).filter(([, i]) => rows.some((r) => r.extra?.[i]));
  const body = rows
    .map((r) => {
      const saved = r.page > 0 && r.wire !== undefined ? `${Math.round((1 - r.wire / r.page) * 100)}%` : '–';
      const data = {
        path: r.path,
        status: r.status,
        encoding: r.encoding,
        wire: r.wire,
        page: r.page,
        xCache: r.xCache,
        worker: r.worker,
      };
      const attributes = Object.entries(data)
        .map(([name, value]) => `data-${name.toLowerCase()}="${esc(value ?? '')}"`)
        .join(' ');
      return `<tr ${attributes}>
<td>${esc(r.label)}<br><code>${esc(r.path)}</code></td>
<td class="num">${r.status || esc(r.error)}</td>
<td>${esc(r.encoding || 'none')}</td>
<td class="num">${bytes(r.wire)}</td>
<td class="num">${bytes(r.page)}</td>
<td class="num">${saved}</td>
<td>${esc(r.xCache || '–')}${r.cacheStatus ? `<br><small>${esc(r.cacheStatus)}</small>` : ''}</td>
${extras.map(([, i]) => `<td>${esc(r.extra?.[i] || '–')}</td>`).join('')}
<td>${esc(r.worker)}</td>
<td class="num">${Math.round(r.ms)} ms</td>
</tr>`;
    })
    .join('');
  return `<table><thead><tr><th>request</th><th>status</th><th>Content-Encoding</th><th>wire</th><th>page</th>
<th>saved</th><th>X-Cache / Cache-Status</th>${extras.map(([name]) => `<th>${esc(name)}</th>`).join('')}<th>worker</th><th>time</th></tr></thead><tbody>${body}</tbody></table>`;
}

/** Bytes on the wire against the decoded page, one bar per distinct page, each as wide as its page. */
function bars(rows) {
  const seen = new Set();
  const shown = rows.filter((r) => r.page > 0 && !seen.has(r.path) && seen.add(r.path));
  const lines = shown.map((r) => {
    const saved = Math.round((1 - r.wire / r.page) * 100);
    return `<div class="bar-row" data-path="${esc(r.path)}">
<span>${esc(r.label)}</span>
<span class="bar-track"><span class="bar-wire" style="width:${((r.wire / r.page) * 100).toFixed(1)}%"></span></span>
<span>${bytes(r.wire)} of ${bytes(r.page)}${saved > 0 ? `: −${saved}%` : ''}</span>
</div>`;
  });
  return `<p class="legend"><span style="background:#2e7d32"></span>sent (encoded body)<span style="background:#e3e3e3"></span>saved by squashing and compression (the whole bar is the page)</p>${lines.join('')}`;
}

/** A strip chart: one dot per request at its latency, one lane per set, coloured by X-Cache. */
function strip(lanes) {
  const width = 860;
  const left = 120;
  const lane = 30;
  const height = lanes.length * lane + 34;
  const all = lanes.flatMap((l) => l.rows.map((r) => r.ms));
  const step = [10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000].find((s) => Math.max(...all, 1) / s <= 6) ?? 10000;
  const top = Math.ceil(Math.max(...all, 1) / step) * step;
  const x = (ms) => left + (ms / top) * (width - left - 40);
  const parts = [];
  for (let t = 0; t <= top; t += step) {
    parts.push(
      `<line x1="${x(t)}" x2="${x(t)}" y1="4" y2="${height - 26}" stroke="#ddd"/>`,
      `<text x="${x(t)}" y="${height - 12}" text-anchor="middle">${t} ms</text>`,
    );
  }
  lanes.forEach((l, i) => {
    const y = 4 + i * lane + lane / 2;
    parts.push(`<text x="${left - 8}" y="${y + 4}" text-anchor="end">${esc(l.name)}</text>`);
    // Misses last, so the one build is drawn over the hits; a little vertical spread keeps equal times apart.
    const ordered = [...l.rows].sort((a, b) => (a.xCache === 'MISS') - (b.xCache === 'MISS'));
    for (const [k, r] of ordered.entries()) {
      const colour = colours[r.xCache] ?? colours.none;
      parts.push(
        `<circle cx="${x(r.ms).toFixed(1)}" cy="${y + ((k % 3) - 1) * 5}" r="5" fill="${colour}" fill-opacity="0.6"><title>${esc(`${r.label} ${r.path}: ${Math.round(r.ms)} ms ${r.xCache}`)}</title></circle>`,
      );
    }
  });
  const legend = Object.entries(colours)
    .map(([name, colour]) => `<span style="background:${colour}"></span>${name === 'none' ? 'no X-Cache' : name}`)
    .join('');
  return `<p class="legend">${legend}</p><svg width="${width}" height="${height}" font-size="12" font-family="sans-serif" role="img" aria-label="latency of each request">${parts.join('')}</svg>`;
}

/** How many responses said each X-Cache verdict (MISS, HIT, STALE; `none` for no header), in the order of {@link colours}. */
function verdictCounts(rows) {
  const counts = Object.fromEntries(Object.keys(colours).map((name) => [name, 0]));
  for (const r of rows) counts[Object.hasOwn(colours, r.xCache) ? r.xCache : 'none']++;
  return counts;
}

const pageRuns = [];

/** Fetches every listed page, one after another, and redraws the panel. */
async function refresh() {
  panel.dataset.state = 'running';
  const rows = [];
  for (const request of config.liveRequests) rows.push(await measure(request, request.path));
  pageRuns.push(rows);
  panel.querySelector('[data-result="refresh"]').innerHTML = table(rows);
  document.getElementById('dashboard-bars').innerHTML = bars(rows);
  const lanes = pageRuns.slice(-3).map((run, i, shown) => ({
    name:
      i === shown.length - 1
        ? 'latest press'
        : `${shown.length - 1 - i} press${shown.length - 1 - i > 1 ? 'es' : ''} ago`,
    rows: run,
  }));
  document.getElementById('dashboard-strip').innerHTML = strip(lanes);
  panel.dataset.state = 'done';
}

/** Runs a button's requests and shows them, with the build count when the button asks for it. */
async function press(button) {
  const box = panel.querySelector(`[data-result="${button.id}"]`);
  box.dataset.state = 'running';
  box.innerHTML = '<p>Running…</p>';
  const token = fresh();
  const paths = button.requests.map((r) => r.path.replaceAll('{fresh}', token));
  let rows;
  if (button.concurrent) rows = await Promise.all(button.requests.map((r, i) => measure(r, paths[i])));
  else {
    rows = [];
    for (const [i, r] of button.requests.entries()) rows.push(await measure(r, paths[i]));
  }
  let verdict = '';
  if (button.countBuildsOf) {
    const url = button.countBuildsOf.replaceAll('{fresh}', token);
    const response = await fetch(`/api/builds?url=${encodeURIComponent(url)}`, askServer);
    const { builds } = await response.json();
    const workers = [...new Set(builds.map((b) => b.worker))].join(', ');
    const answeredBy = [...new Set(rows.map((r) => r.worker))].sort().join(' and ');
    box.dataset.builds = String(builds.length);
    box.dataset.builder = workers;
    const verdicts = verdictCounts(rows);
    const counted = Object.entries(verdicts)
      .filter(([, n]) => n > 0)
      .map(([name, n]) => `${n} ${name === 'none' ? 'without X-Cache' : name}`)
      .join(', ');
    const attributes = Object.entries(verdicts)
      .map(([name, n]) => `data-${name.toLowerCase()}="${n}"`)
      .join(' ');
    const sorted = rows.map((r) => r.ms).sort((a, b) => a - b);
    verdict = `<p class="verdict" data-builds="${builds.length}" data-requests="${rows.length}" ${attributes}>
${builds.length} build${builds.length === 1 ? '' : 's'} for ${rows.length} requests to <code>${esc(url)}</code>${workers ? `, built by worker ${esc(workers)}` : ''};
answered by worker${answeredBy.includes(' and ') ? 's' : ''} ${esc(answeredBy)}. X-Cache: ${counted}.
Latency: fastest ${Math.round(sorted[0])} ms, median ${Math.round(sorted[sorted.length >> 1])} ms, slowest ${Math.round(sorted.at(-1))} ms.</p>`;
  }
  box.innerHTML = `${verdict}${strip([{ name: button.id, rows }])}<details><summary>every request</summary>${table(rows)}</details>`;
  box.dataset.state = 'done';
}

/** 1,234,567 B as 1.2 MiB; bytes() for the smaller. */
function bigBytes(n) {
  return n < 1024 * 1024 ? bytes(n) : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A percentage with one decimal (<0.1% rather than a 0.0% that is not nothing), or – when there is nothing to divide by. */
function percent(ratio) {
  if (ratio === null || !Number.isFinite(ratio)) return '–';
  return ratio > 0 && ratio < 0.001 ? '<0.1%' : `${(ratio * 100).toFixed(1)}%`;
}

const shownCounters = new Map();

/** One number in a `tag`, named by `data-counter` for tests, marked when it changed since the last poll. */
function counter(tag, name, value, text = value.toLocaleString('en-US')) {
  const changed = shownCounters.has(name) && shownCounters.get(name) !== value;
  shownCounters.set(name, value);
  return `<${tag} class="num${changed ? ' changed' : ''}" data-counter="${esc(name)}" data-value="${esc(value ?? '')}">${esc(text)}</${tag}>`;
}

const counterCell = (name, value, text) => counter('td', name, value, text);

/** A small table of named counters: one header row, one row of values. */
function counterTable(caption, prefix, entries) {
  return `<table><caption>${esc(caption)}</caption><thead><tr>${entries.map(([, label]) => `<th>${esc(label)}</th>`).join('')}</tr></thead>
<tbody><tr>${entries.map(([key, , value]) => counterCell(`${prefix}.${key}`, value)).join('')}</tr></tbody></table>`;
}

/** One content coding's row: responses, bytes before coding and as sent, and the difference saved. */
function codingRow(k) {
  const saved = `${bigBytes(k.saved)} (${percent(k.bytesIn > 0 ? k.saved / k.bytesIn : null)})`;
  return `<tr data-coding="${esc(k.coding)}"><td>${esc(k.coding)}</td>${counterCell(`codings.${k.coding}.responses`, k.responses)}
<td class="num">${bigBytes(k.bytesIn)}</td><td class="num">${bigBytes(k.bytesOut)}</td>${counterCell(`codings.${k.coding}.saved`, k.saved, saved)}</tr>`;
}

/** Draws what /api/stats answered: both workers' `mw.stats()` summed (examples/demo/metrics.ts). */
function drawCounters(c) {
  const r = c.requests;
  const head = `<p class="counters-head">Hit ratio ${counter('strong', 'hitRatio', c.hitRatio, percent(c.hitRatio))}:
fresh hits over every request that went through <code>ctx.bufferIsCached()</code>
(${r.hit.toLocaleString('en-US')} of ${r.total.toLocaleString('en-US')}; stale and collapsed answers count in the total, not as hits).
${c.answered} of ${c.workers} workers answered.</p>`;
  const requests = counterTable('requests, by outcome', 'requests', [
    ['hit', 'hit', r.hit],
    ['stale', 'stale', r.stale],
    ['staleOnError', 'stale on error', r.staleOnError],
    ['collapsed', 'collapsed', r.collapsed],
    ['failed', 'failed', r.failed],
    ['miss', 'miss', r.miss],
    ['bypass', 'bypass', r.bypass],
    ['total', 'total', r.total],
  ]);
  const builds = counterTable('builds', 'builds', [
    ['started', 'started', c.builds.started],
    ['failed', 'failed', c.builds.failed],
    ['timedOut', 'timed out', c.builds.timedOut],
  ]);
  const waiters = counterTable("waiters for another request's build", 'waiters', [
    ['waited', 'waited', c.waiters.waited],
    ['woken', 'woken', c.waiters.woken],
    ['refused', 'refused (503)', c.waiters.refused],
  ]);
  const codings = c.codings.map(codingRow).join('');
  const savedTable = `<table><caption>bytes saved per coding (before coding − as sent)</caption>
<thead><tr><th>coding</th><th>responses</th><th>before</th><th>sent</th><th>saved</th></tr></thead>
<tbody>${codings || '<tr><td colspan="5">no response yet</td></tr>'}</tbody></table>`;
  const budgets = c.budgets
    .map(
      (b) => `<div class="bar-row" data-budget="${esc(b.name)}" data-full="${b.full ?? ''}">
<span>${esc(b.name)}</span>
<span class="bar-track"><span class="bar-wire" style="width:${b.full === null ? 0 : Math.max(Math.min(b.full * 100, 100), b.bytes > 0 ? 0.5 : 0).toFixed(1)}%"></span></span>
<span>${bigBytes(b.bytes)} of ${b.limit > 0 ? bigBytes(b.limit) : 'no limit'} (${percent(b.full)})</span>
</div>`,
    )
    .join('');
  const box = document.getElementById('dashboard-counters');
  box.innerHTML = `${head}<div class="counter-tables">${requests}${builds}${waiters}</div>${savedTable}
<h4>Memory budgets: bytes held against their limit, both workers' budgets added up</h4>${budgets}`;
  box.dataset.polls = String(Number(box.dataset.polls ?? 0) + 1);
  box.dataset.state = 'live';
}

/** Asks for the counters every `everyMs`, while the page is visible; a failed poll is said and retried. */
async function pollCounters() {
  const box = document.getElementById('dashboard-counters');
  for (;;) {
    if (!document.hidden) {
      try {
        const response = await fetch(config.counters.path, askServer);
        if (!response.ok) throw new Error(`${response.status} ${(await response.json()).error ?? ''}`);
        drawCounters(await response.json());
      } catch (error) {
        box.dataset.state = 'error';
        box.querySelector('.counters-error')?.remove();
        box.insertAdjacentHTML(
          'afterbegin',
          `<p class="counters-error">Could not read the counters: ${esc(error)}</p>`,
        );
      }
    }
    await sleep(config.counters.everyMs);
  }
}

for (const element of panel.querySelectorAll('button[data-action]')) {
  element.addEventListener('click', () => {
    const id = element.dataset.action;
    element.disabled = true;
    const run = id === 'refresh' ? refresh() : press(config.panelButtons.find((b) => b.id === id));
    run.finally(() => (element.disabled = false));
  });
}

void pollCounters();
await refresh();
