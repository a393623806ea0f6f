// The dashboard in a real browser: Debian's headless Chromium driven by puppeteer-core (pinned in
// package.json), against a real `oe serve` on a free port over a temporary root holding the
// experiences of fixtures/. It starts a run from the form and watches it finish without a reload
// (the graph turns the success colour), opens a failed node's error (shown as text, not HTML),
// approves a waiting run from its page, checks the phone layout, and writes screenshots at
// 1280x800 and 390x844.
// Usage: node dashboard_test.mjs <path of oe> <folder for the screenshots>
// Exits 77 (ctest: skipped) when Chromium or the npm packages are missing, saying which.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const [oe_arg, shots_arg] = process.argv.slice(2);
if (!oe_arg || !shots_arg) {
  console.error("usage: node dashboard_test.mjs <oe> <screenshot folder>");
  process.exit(2);
}
// Absolute: the server runs in the work folder.
const oe = resolve(oe_arg);
const shots = resolve(shots_arg);
const here = dirname(fileURLToPath(import.meta.url));
const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) => existsSync(path));
if (!chromium) {
  console.log("SKIP: chromium is not installed: run .ci/deps (Debian's chromium)");
  process.exit(77);
}
let puppeteer;
try {
  puppeteer = (await import("puppeteer-core")).default;
} catch {
  console.log("SKIP: puppeteer-core is not installed in tests/browser: run .ci/deps (npm ci there)");
  process.exit(77);
}

const SUCCESS_FILL = "rgb(218, 251, 225)";  // .st-succeeded's --st-fill in app.css
const DEADLINE_MS = 60000;

const work = mkdtempSync(join(tmpdir(), "oe-browser-"));
const root = join(work, "root");
for (const name of ["flow", "failing", "gated"]) {
  cpSync(join(here, "fixtures", name), join(root, name), { recursive: true });
}
mkdirSync(shots, { recursive: true });

let failures = 0;
let passes = 0;
function check(what, ok, detail = "") {
  if (ok) {
    passes += 1;
    console.log(`ok   ${what}`);
  } else {
    failures += 1;
    console.log(`FAIL ${what}${detail ? `: ${detail}` : ""}`);
  }
}

// `oe serve` on a port the kernel picks; its URL is read from what it prints.
function startServer(extra = []) {
  const child = spawn(oe, ["serve", "--listen", "127.0.0.1:0", "--root", root, ...extra], {
    cwd: work,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`oe serve printed no URL in 30 s:\n${output}`)), 30000);
    const look = (chunk) => {
      output += chunk;
      const found = output.match(/https?:\/\/127\.0\.0\.1:(\d+)/);
      if (found && found[1] !== "0") {
        clearTimeout(timer);
        resolve(found[0]);
      }
    };
    child.stdout.on("data", look);
    child.stderr.on("data", look);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`oe serve exited with ${code} before it listened:\n${output}`));
    });
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`oe serve could not start (${oe}): ${err.message}`));
    });
  });
  return { child, url, output: () => output };
}

// Waits in the page for a condition that the server and the run bring about; the deadline only
// turns a hang into a failure.
async function waitIn(page, what, fn, ...args) {
  try {
    return await page.waitForFunction(fn, { timeout: DEADLINE_MS, polling: 50 }, ...args);
  } catch (err) {
    const text = await page.evaluate(() => document.querySelector("main")?.innerText ?? "").catch(() => "");
    throw new Error(`timed out waiting for ${what}; the page shows:\n${text.slice(0, 2000)}`);
  }
}

function runIdOf(page) {
  const found = page.url().match(/#\/runs\/([^/?]+)/);
  return found ? decodeURIComponent(found[1]) : "";
}

async function stopServer(server) {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    const exited = new Promise((resolve) => server.child.once("exit", resolve));
    server.child.kill("SIGTERM");
    await exited;
  }
}

let server = startServer();
let browser;
let exitCode = 1;
try {
  const base = await server.url;
  console.log(`oe serve at ${base}, root ${root}`);
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: join(work, "chromium-profile"),
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions"],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const pageErrors = [];
  page.on("pageerror", (err) => pageErrors.push(`uncaught: ${err.message}`));
  page.on("console", (message) => {
    // A CSP refusal is logged as a console error: the page and its policy disagree.
    if (message.type() === "error" && /Content Security Policy|Refused to/.test(message.text())) {
      pageErrors.push(`csp: ${message.text()}`);
    }
  });

  // ---- the headers the page is served with
  const index = await page.goto(`${base}/`, { waitUntil: "load" });
  const headers = index.headers();
  check("GET / is the dashboard", index.status() === 200 && /text\/html/.test(headers["content-type"] ?? ""),
        `${index.status()} ${headers["content-type"]}`);
  check("the page has a CSP without inline script",
        /default-src 'self'/.test(headers["content-security-policy"] ?? "") &&
          !/unsafe-inline/.test(headers["content-security-policy"] ?? ""),
        headers["content-security-policy"]);
  check("nosniff and no referrer", headers["x-content-type-options"] === "nosniff" &&
          headers["referrer-policy"] === "no-referrer");

  // ---- start a run from the form and watch it finish without a reload
  await page.goto(`${base}/#/start/flow`, { waitUntil: "load" });
  await page.waitForSelector("#start-form #args-json", { timeout: DEADLINE_MS });
  await page.screenshot({ path: join(shots, "start-1280x800.png") });
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.$eval("#args-json", (box) => { box.value = ""; });
  await page.type("#args-json", '{"who": "the browser"}');
  await page.click("#start-submit");
  await waitIn(page, "the run page after starting", () => /#\/runs\/[^/]+$/.test(location.hash));
  const flowRun = runIdOf(page);
  check("the form started a run and opened its page", flowRun !== "", page.url());
  await waitIn(page, "the graph of the run", () => document.querySelectorAll("#graph g.node[data-node]").length === 4);
  await waitIn(page, "start and left done, right running",
    () => ["start", "left"].every((id) => document.querySelector(`#graph g.node[data-node="${id}"]`)?.classList.contains("st-succeeded")) &&
      document.querySelector('#graph g.node[data-node="right"]')?.classList.contains("st-running"));
  const runningFill = await page.$eval('#graph g.node[data-node="right"] rect', (rect) => getComputedStyle(rect).fill);
  check("a running node is not painted as done", runningFill !== SUCCESS_FILL, runningFill);
  const liveBars = await page.$$eval("#timeline .bar", (list) => list.map((bar) => `${bar.dataset.node}:${bar.className}`));
  check("the timeline has bars for what started, right's still running",
        liveBars.length === 3 && liveBars.some((bar) => bar.startsWith("right:") && bar.includes("st-running")) &&
          !liveBars.some((bar) => bar.startsWith("finish:")), liveBars.join(", "));
  await page.screenshot({ path: join(shots, "run-live-1280x800.png") });
  writeFileSync(join(root, "flow", "release"), "");
  await waitIn(page, "every node of the run succeeded",
    () => [...document.querySelectorAll("#graph g.node[data-node]")].every((g) => g.classList.contains("st-succeeded")) &&
      document.querySelector(".run-head .badge")?.dataset.status === "succeeded");
  const fills = await page.$$eval("#graph g.node[data-node] rect", (rects) => rects.map((rect) => getComputedStyle(rect).fill));
  check("the graph turned the success colour", fills.length === 4 && fills.every((fill) => fill === SUCCESS_FILL), fills.join(", "));
  // A reload would have dropped the flag set on the start form's page.
  check("without a reload", await page.evaluate(() => window.__sameDocument === true));
  const bars = await page.$$eval("#timeline .bar", (list) => list.map((bar) => bar.dataset.node));
  check("the timeline has a bar per node", bars.length === 4 && ["start", "left", "right", "finish"].every((id) => bars.includes(id)), bars.join(","));
  await waitIn(page, "the final state", () => document.querySelector('#state tr[data-field="summary"]') !== null);
  const summary = await page.$eval('#state tr[data-field="summary"] td.value', (cell) => cell.textContent);
  check("the state shows what the run wrote", summary.includes("hello, the browser from the left"), summary);
  await page.click('#state tr[data-field="greeting"] button');
  await waitIn(page, "the field's history", () => document.querySelector("#state-history li") !== null);
  const history = await page.$eval("#state-history", (box) => box.textContent);
  check("a field's history names its writer", history.includes("start") && history.includes("hello, the browser"), history);
  await page.click('#graph g.node[data-node="left"]');
  await waitIn(page, "the node detail of left", () => document.querySelector("#node-detail")?.textContent.includes("left"));
  await page.screenshot({ path: join(shots, "run-1280x800.png") });
  await page.screenshot({ path: join(shots, "run-1280-full.png"), fullPage: true });

  // ---- a failed node's error, as text
  await page.goto(`${base}/#/start/failing`, { waitUntil: "load" });
  await page.waitForSelector("#start-form", { timeout: DEADLINE_MS });
  await page.click("#start-submit");
  await waitIn(page, "the failing run's page", () => /#\/runs\/[^/]+$/.test(location.hash));
  await waitIn(page, "explode failed", () => document.querySelector('#graph g.node[data-node="explode"]')?.classList.contains("st-failed"));
  await waitIn(page, "the run failed", () => document.querySelector(".run-head .badge")?.dataset.status === "failed");
  await page.click('#graph g.node[data-node="explode"]');
  await waitIn(page, "the error of explode", () => document.querySelector("#node-error") !== null);
  const error = await page.$eval("#node-error", (pre) => pre.textContent);
  check("a failed node's error is shown", error.includes("boom:") && error.includes("<b>not bold</b>"), error);
  check("its markup stays text", await page.evaluate(() =>
    window.__pwned === undefined && document.querySelector("#node-detail img, #node-detail b") === null));
  const after = await page.$eval('#graph g.node[data-node="after"]', (g) => g.dataset.status);
  check("what depends on it never ran", after === "pending", after);
  await page.screenshot({ path: join(shots, "failed-node-1280x800.png") });

  // ---- approve a waiting run from its page
  await page.goto(`${base}/#/start/gated`, { waitUntil: "load" });
  await page.waitForSelector("#start-form", { timeout: DEADLINE_MS });
  await page.click("#start-submit");
  await waitIn(page, "the gated run's page", () => /#\/runs\/[^/]+$/.test(location.hash));
  const parked = runIdOf(page);
  await waitIn(page, "the run waits for a decision",
    () => document.querySelector(".run-head .badge")?.dataset.status === "waiting" &&
      document.querySelector('.approval button.approve[data-node="review"]') !== null &&
      document.querySelector('.approval[data-node="review"] .prompt') !== null);
  const prompt = await page.$eval(".approval", (box) => box.textContent);
  check("the question is shown", prompt.includes("Ship it?"), prompt);
  await page.screenshot({ path: join(shots, "waiting-1280x800.png") });
  await page.goto(`${base}/#/approvals`, { waitUntil: "load" });
  await waitIn(page, "the approvals page", () => document.querySelector('#approvals .approval[data-node="review"]') !== null);
  const listedApproval = await page.$eval('#approvals .approval[data-node="review"]', (card) => card.textContent);
  check("the approvals page lists the question", listedApproval.includes("Ship it?") && listedApproval.includes("gated"), listedApproval);
  await page.goto(`${base}/#/runs/${encodeURIComponent(parked)}`, { waitUntil: "load" });
  await waitIn(page, "the waiting run's page again",
    () => document.querySelector('.approval[data-node="review"] .prompt') !== null);
  await page.type("#comment-review", "looks good");
  await page.type("#as-review", "browser-test");
  await page.click('.approval button.approve[data-node="review"]');
  await waitIn(page, "the continued run succeeded",
    (old) => !location.hash.includes(old) &&
      document.querySelector(".run-head .badge")?.dataset.status === "succeeded" &&
      document.querySelector('#graph g.node[data-node="ship"]')?.classList.contains("st-succeeded"), parked);
  check("approving continued the run to its end", runIdOf(page) !== parked, runIdOf(page));
  await page.goto(`${base}/#/runs/${encodeURIComponent(parked)}`, { waitUntil: "load" });
  await waitIn(page, "the parked run's page says it was decided",
    () => document.querySelector(".notice")?.textContent.includes("Decided"));
  check("a decided question is not offered again",
        await page.evaluate(() => document.querySelector(".approval button.approve") === null));

  // ---- the runs list, filtered
  await page.goto(`${base}/#/`, { waitUntil: "load" });
  await waitIn(page, "the runs list", () => document.querySelectorAll("#runs tbody tr[data-run]").length >= 4);
  const listed = await page.$$eval("#runs tbody tr[data-run]", (rows) => rows.map((row) => row.dataset.run));
  check("the list shows the runs", listed.includes(flowRun) && listed.includes(parked), listed.join(","));
  await waitIn(page, "the server's figures", () => !document.querySelector("#overview")?.hidden &&
    document.querySelector('#overview .badge[data-status="succeeded"]') !== null);
  const figures = await page.$eval("#overview", (box) => box.textContent);
  check("the figures of /metrics are shown", /succeeded\s*[2-9]/.test(figures) && figures.includes("Queue"), figures);
  await page.screenshot({ path: join(shots, "runs-1280x800.png") });
  await page.select("#filter-status", "succeeded");
  await waitIn(page, "the filtered list",
    () => /status=succeeded/.test(location.hash) && document.querySelectorAll("#runs tbody tr[data-run]").length > 0 &&
      [...document.querySelectorAll("#runs tbody tr[data-run]")].every((row) => row.dataset.status === "succeeded"));
  const kept = await page.$$eval("#runs tbody tr[data-run]", (rows) => rows.map((row) => row.dataset.run));
  check("the status filter keeps the succeeded runs only", kept.includes(flowRun) && !kept.includes(parked), kept.join(","));

  // ---- a phone
  await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  await page.goto(`${base}/#/`, { waitUntil: "load" });
  await waitIn(page, "the runs list on a phone", () => document.querySelectorAll("#runs tbody tr[data-run]").length >= 4);
  const listOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check("the runs list fits a phone's width", listOverflow <= 0, `${listOverflow}px too wide`);
  await page.screenshot({ path: join(shots, "runs-390x844.png") });
  await page.goto(`${base}/#/runs/${encodeURIComponent(flowRun)}`, { waitUntil: "load" });
  await waitIn(page, "the run on a phone",
    () => [...document.querySelectorAll("#graph g.node[data-node]")].length === 4 &&
      document.querySelector(".run-head .badge")?.dataset.status === "succeeded");
  const runOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check("the run page fits a phone's width", runOverflow <= 0, `${runOverflow}px too wide`);
  await page.screenshot({ path: join(shots, "run-390x844.png") });
  await page.screenshot({ path: join(shots, "run-390-full.png"), fullPage: true });

  // ---- with tokens: the same root behind --token-file, an admin and a read-only token
  await stopServer(server);
  const adminToken = "admin-token-0123456789abcdef";
  const readToken = "read-token-0123456789abcdef";
  const tokenFile = join(work, "tokens.txt");
  writeFileSync(tokenFile, `# the browser test's tokens\nadmin tester ${adminToken}\nread viewer ${readToken}\n`, { mode: 0o600 });
  server = startServer(["--token-file", tokenFile]);
  const secured = await server.url;
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(`${secured}/#/`, { waitUntil: "load" });
  await waitIn(page, "the page asks for a token", () => !document.querySelector("#banner").hidden &&
    /token/i.test(document.querySelector("#banner").textContent));
  const setToken = async (value) => {
    await page.evaluate(() => { document.querySelector("#token-box").open = true; });
    await page.type("#token-input", value);
    await page.click('#token-form button[type="submit"]');
  };
  await setToken(adminToken);
  await waitIn(page, "the runs list with the admin token", () => document.querySelectorAll("#runs tbody tr[data-run]").length >= 4);
  await waitIn(page, "the live list over an authorised stream", () => document.querySelector("#live").textContent === "live");
  check("the token is kept in the tab, not in a cookie", await page.evaluate((token) =>
    sessionStorage.getItem("oe.token") === token && document.cookie === "", adminToken));
  await page.goto(`${secured}/#/runs/${encodeURIComponent(flowRun)}`, { waitUntil: "load" });
  await waitIn(page, "a run's page with a token",
    () => [...document.querySelectorAll("#graph g.node[data-node]")].length === 4 &&
      [...document.querySelectorAll("#graph g.node[data-node]")].every((g) => g.classList.contains("st-succeeded")));
  await setToken(readToken);
  await page.goto(`${secured}/#/start/flow`, { waitUntil: "load" });
  await page.waitForSelector("#start-form", { timeout: DEADLINE_MS });
  await page.click("#start-submit");
  await waitIn(page, "the refusal of a read-only token", () => document.querySelector("#start-form .notice.bad") !== null);
  const refusal = await page.$eval("#start-form .notice.bad", (box) => box.textContent);
  check("a read-only token cannot start a run, and the page says so", /#\/start\/flow$/.test(page.url()) && refusal.length > 0, refusal);

  check("no script error and no CSP refusal", pageErrors.length === 0, pageErrors.join("\n"));
  exitCode = failures === 0 ? 0 : 1;
} catch (err) {
  console.log(`FAIL ${err.stack || err}`);
  console.log(`oe serve said:\n${server.output().slice(-4000)}`);
  exitCode = 1;
} finally {
  if (browser) {
    await browser.close().catch(() => {});
  }
  await stopServer(server);
  console.log(`${passes} passed, ${failures} failed; screenshots in ${shots}`);
  if (exitCode === 0) {
    rmSync(work, { recursive: true, force: true });
  } else {
    console.log(`left for a look: ${work}`);
  }
}
process.exit(exitCode);
