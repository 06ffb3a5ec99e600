// Browser check of airlock's approval view (MCP Apps) in a real host: a
// small host page built on the MCP Apps SDK's host bridge (AppBridge from
// @modelcontextprotocol/ext-apps/app-bridge, bundled for the page by vite)
// in headless Chromium, driven by playwright-core.
//
//   node apps.mjs <MCP URL> <screenshot dir>
//
// The host's MCP client (the official TypeScript SDK, in Node) declares the
// io.modelcontextprotocol/ui extension and connects to `airlock serve --demo
// --http`. The host lists the tools as a model would see them (app-only
// tools left out), reads the view's resource, and plays the model: it calls
// preview_selection; the page renders the linked view in a sandboxed iframe
// (CSP from the resource's _meta), hands it the tool's input and result
// through the bridge, and forwards the view's tools/call to the server. In
// the view, at 1280x800 the person pages through the manifest, ticks the
// acknowledgement and clicks Approve, and the model's commit runs; at
// 375x812 the person rejects another selection, and the model's commit is
// refused. An exclusion reason that holds markup stays text. Screenshots of
// both are saved in the screenshot dir.
//
// Prints a JSON summary (ok: true, the selections, the operation) and exits
// 0; on failure prints "apps: <step>: <message>" on stderr and exits 1.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { getToolUiResourceUri, isToolVisibilityAppOnly } from '@modelcontextprotocol/ext-apps/app-bridge';
import { chromium } from 'playwright-core';
import { build } from 'vite';

const [url, shots] = process.argv.slice(2);
if (!url || !shots) {
  process.stderr.write('usage: node apps.mjs <MCP URL> <screenshot dir>\n');
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const UI = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';
const MARKUP = 'legal hold <script>window.__injected=1</script><img src=x onerror="window.__injected=2">';
const ACTION = { type: 'pause_collection', params: { reason: 'approved credit hold review' } };
const previewArgs = (region) => ({
  resource: 'subscriptions', filter: { status: 'past_due', region },
  exclude: [
    { field: 'tags', op: 'contains', value: 'disputed', reason: 'disputed invoices stay' },
    { field: 'tags', op: 'contains', value: 'legal_hold', reason: MARKUP },
  ],
  action: ACTION,
});

let step = 'start';
function check(cond, message) {
  if (!cond) throw new Error(message);
}

// bundleBridge builds the host bridge for the page: one script, no import.
async function bundleBridge() {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-apps-'));
  try {
    const entry = join(process.cwd(), `.apps-entry-${process.pid}.mjs`);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(entry, 'import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";\nwindow.ExtApps = { AppBridge, PostMessageTransport };\n');
    try {
      await build({ root: process.cwd(), logLevel: 'error', configFile: false,
        build: { lib: { entry, formats: ['iife'], name: 'ExtAppsBundle', fileName: () => 'bridge.js' }, outDir: dir, emptyOutDir: true, minify: false } });
    } finally {
      rmSync(entry, { force: true });
    }
    return readFileSync(join(dir, 'bridge.js'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// cspOf is the policy a host applies to the view from its resource's
// _meta.ui.csp: nothing from anywhere but the view itself, and only the
// domains the resource lists (airlock lists none).
function cspOf(csp) {
  const list = (k) => (csp?.[k] || []).join(' ');
  return [`default-src 'none'`, `script-src 'unsafe-inline' ${list('resourceDomains')}`, `style-src 'unsafe-inline' ${list('resourceDomains')}`,
    `img-src data: ${list('resourceDomains')}`, `font-src ${list('resourceDomains')}`, `connect-src ${list('connectDomains') || "'none'"}`,
    `frame-src ${list('frameDomains') || "'none'"}`, `base-uri ${list('baseUriDomains') || "'none'"}`].join('; ');
}

const HOST_PAGE = `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{margin:0;font:14px system-ui;background:#f6f6f8}.chat{padding:8px}.msg{background:#fff;border-radius:8px;padding:6px 10px;margin:0 0 8px}
iframe{display:block;width:100%;border:1px solid #ccc;border-radius:8px;background:#fff;height:600px}</style></head>
<body><div class="chat"><div class="msg" id="said">The agent previewed a bulk write. Review it below.</div><iframe id="view" sandbox="allow-scripts" title="airlock approval"></iframe></div></body></html>`;

// mountView renders the view in the page's sandboxed iframe, connected by
// an AppBridge whose tool calls go to the host's MCP client (in Node).
// shoot saves the page as a person sees it on the first screen, and whole:
// the view's iframe is painted only inside the viewport, so the viewport is
// grown to the page's height for the whole one.
async function shoot(page, name) {
  const viewport = page.viewportSize();
  await page.screenshot({ path: join(shots, `${name}.png`) });
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewportSize({ width: viewport.width, height });
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(shots, `${name}-whole.png`) });
  await page.setViewportSize(viewport);
}

async function mountView(page, bundle, html, csp, toolInput, toolResult, width) {
  await page.setContent(HOST_PAGE);
  await page.addScriptTag({ content: bundle });
  await page.evaluate(async ({ html, csp, toolInput, toolResult, width }) => {
    const iframe = document.getElementById('view');
    const bridge = new window.ExtApps.AppBridge(null, { name: 'airlock-test-host', version: '1' }, { serverTools: {} }, {
      hostContext: { theme: 'light', displayMode: 'inline', platform: 'web', containerDimensions: { width, maxHeight: 6000 },
        styles: { variables: { '--color-text-primary': '#14141a', '--font-sans': 'system-ui, sans-serif' } } },
    });
    bridge.oncalltool = (params) => window.hostCallTool(params);
    bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${height}px`; };
    const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
    await bridge.connect(new window.ExtApps.PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
    const policy = `<meta http-equiv="Content-Security-Policy" content="${csp}">`;
    iframe.srcdoc = html.replace('<head>', `<head>${policy}`);
    await initialized;
    await bridge.sendToolInput({ arguments: toolInput });
    await bridge.sendToolResult(toolResult);
    window.bridge = bridge;
  }, { html, csp, toolInput, toolResult, width });
  return page.frameLocator('#view');
}

const client = new Client({ name: 'airlock-apps-host', version: '1' }, { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } });
const summary = { ok: false };
let browser;
try {
  step = 'connect';
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    return { res, env: res.structuredContent || {} };
  };

  step = 'tools/list';
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const modelTools = tools.filter((t) => !isToolVisibilityAppOnly(t)).map((t) => t.name);
  check(byName.decide_selection && isToolVisibilityAppOnly(byName.decide_selection), 'decide_selection is not listed as app-only');
  check(!modelTools.includes('decide_selection'), 'the model would see decide_selection');
  const uri = getToolUiResourceUri(byName.preview_selection);
  check(uri && uri === getToolUiResourceUri(byName.commit_bulk_action), `the view is not linked: ${uri}`);
  summary.modelTools = modelTools;

  step = 'resources/read';
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  check(content.mimeType === MIME, `view MIME type ${content.mimeType}`);
  const csp = cspOf(content._meta?.ui?.csp);
  summary.csp = csp;
  const bundle = await bundleBridge();

  step = 'launch';
  browser = await chromium.launch({ executablePath, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  summary.browser = browser.version();
  const cspViolations = [];
  const open = async (viewport) => {
    const ctx = await browser.newContext({ viewport });
    // The view reaches the server only through the host: its tools/call.
    await ctx.exposeFunction('hostCallTool', async (params) => client.callTool(params));
    const page = await ctx.newPage();
    page.on('console', (m) => { if (/Content Security Policy|Refused/i.test(m.text())) cspViolations.push(m.text()); });
    return page;
  };

  // --- Approve, on a laptop ---
  step = 'preview (approve)';
  const a = await call('preview_selection', previewArgs('eu'));
  check(!a.env.problem && a.res._meta?.['airlock/approval']?.state, 'the preview carries no view state');
  check(!JSON.stringify(a.res.content).includes(a.res._meta['airlock/approval'].state), 'the state is in what the model reads');
  summary.approve = { selection_id: a.env.data.selection_id, members: a.env.data.counts.members };
  const laptop = await open({ width: 1280, height: 800 });
  let view = await mountView(laptop, bundle, content.text, csp, previewArgs('eu'), a.res, 1280);

  step = 'the view renders the decision';
  await view.locator('#decision').waitFor();
  await view.locator('#records table tbody tr').first().waitFor();
  const title = await view.locator('#title').textContent();
  check(title.includes('pause_collection') && title.includes(String(a.env.data.counts.members)), `title: ${title}`);
  check((await view.locator('#digest').textContent()).startsWith('sha256:'), 'no digest');
  const exclusions = await view.locator('#exclusions').textContent();
  check(exclusions.includes('<script>window.__injected=1</script>'), `the markup is not shown as text: ${exclusions}`);
  check(await view.locator('#exclusions script, #exclusions img').count() === 0, 'markup in a value became elements');
  check(await laptop.frame({ url: /about:srcdoc/ })?.evaluate(() => window.__injected) === undefined, 'markup in a value ran');

  await shoot(laptop, 'approval-view-1280');

  step = 'page through the manifest';
  const first = await view.locator('#records tbody tr td code').first().textContent();
  await view.locator('#next').click();
  await view.locator('#page[data-index="1"]').waitFor();
  const second = await view.locator('#records tbody tr td code').first().textContent();
  check(first !== second, `page 2 starts with the same record ${first}`);
  await view.locator('#prev').click();
  await view.locator('#page[data-index="0"]').waitFor();
  summary.approve.pages = [first, second];

  step = 'approve';
  check(await view.locator('#approve').isDisabled(), 'Approve is enabled before the acknowledgement');
  await view.locator('#acknowledge').check();
  await view.locator('#approve').click();
  await view.locator('#status[data-decision="approved"]').waitFor();
  await laptop.screenshot({ path: join(shots, 'approval-view-1280-approved.png') });

  step = 'commit (approved)';
  const c = await call('commit_bulk_action', { selection_id: a.env.data.selection_id, expected_digest: a.env.data.digest, action: ACTION, mode: 'execute' });
  check(!c.env.problem && c.env.data.status === 'completed', `commit: ${JSON.stringify(c.env.problem || c.env.data?.status)}`);
  summary.approve.operation_id = c.env.data.operation_id;
  summary.approve.approval_id = c.env.data.approval_id;
  summary.approve.succeeded = c.env.data.counts.succeeded;

  // --- Reject, on a phone ---
  step = 'preview (reject)';
  const b = await call('preview_selection', previewArgs('us'));
  check(!b.env.problem && b.res._meta?.['airlock/approval']?.state, 'the second preview carries no view state');
  summary.reject = { selection_id: b.env.data.selection_id, members: b.env.data.counts.members };
  const phone = await open({ width: 375, height: 812 });
  view = await mountView(phone, bundle, content.text, csp, previewArgs('us'), b.res, 375);
  await view.locator('#decision').waitFor();
  await view.locator('#records table tbody tr').first().waitFor();
  const wide = await phone.frame({ url: /about:srcdoc/ }).evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
  check(wide[0] <= wide[1], `the view scrolls sideways at 375 px: ${wide}`);
  // The decision is on the phone's first screen, without scrolling.
  for (const id of ['#decision h2', '#acknowledge', '#approve', '#reject']) {
    const box = await view.locator(id).boundingBox();
    check(box && box.y >= 0 && box.y + box.height <= 812 && box.x + box.width <= 375, `${id} is not on the first screen at 375x812: ${JSON.stringify(box)}`);
  }
  summary.reject.rejectBottom = Math.round(await view.locator('#reject').boundingBox().then((b) => b.y + b.height));
  await shoot(phone, 'approval-view-375');

  step = 'reject';
  await view.locator('#reject').click();
  await view.locator('#status[data-decision="rejected"]').waitFor();
  step = 'commit (rejected)';
  const r = await call('commit_bulk_action', { selection_id: b.env.data.selection_id, expected_digest: b.env.data.digest, action: ACTION, mode: 'execute' });
  check(r.env.problem?.code === 'APPROVAL_REJECTED', `commit after reject: ${JSON.stringify(r.env.problem || r.env.data)}`);

  check(cspViolations.length === 0, `CSP violations: ${cspViolations.join(' | ')}`);
  summary.ok = true;
  process.stdout.write(JSON.stringify(summary) + '\n');
} catch (err) {
  process.stderr.write(`apps: ${step}: ${err?.stack || err}\n`);
  process.exitCode = 1;
} finally {
  await browser?.close();
  await client.close();
}
