// Drives the kmock web console in Debian's Chromium (headless) with playwright-core, for
// tests/integration/test_console.py. One argument: a JSON object
//   {url, topic, group, lags: {partition: lag}, message: {partition, offset, text},
//    follow: {partition, offset, text}, members: [client ids], artifacts: dir,
//    chromium: path, timeout_ms}
// For "follow live" it prints {"event": "follow-waiting"} once its long-poll is in flight:
// the test then produces the record it waits for.
// Prints one JSON line per check ({"event": "ok", "check": ...}) and a screenshot path per
// page ({"event": "screenshot", "path": ...}); the first failed check ends it with exit code
// 1 and {"event": "failed", "check": ..., "error": ...}.
"use strict";

const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const spec = JSON.parse(process.argv[2]);
const say = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
let current = "start";

function check(name, condition, detail) {
  if (!condition) throw new Error(`${name}: ${detail || "not so"}`);
  say({ event: "ok", check: name });
}

async function api(method, p, body) {
  const response = await fetch(spec.url + p, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function main() {
  fs.mkdirSync(spec.artifacts, { recursive: true });
  const browser = await chromium.launch({
    executablePath: spec.chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    timeout: spec.timeout_ms,
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(spec.timeout_ms);
  const consoleErrors = [];
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  const shot = async (name) => {
    const file = path.join(spec.artifacts, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    say({ event: "screenshot", path: file });
  };
  const go = async (hash, ready) => {
    await page.goto(`${spec.url}/${hash}`);
    await page.waitForSelector(ready);
  };
  const errorText = async () => {
    const box = page.locator("#error");
    await box.waitFor({ state: "visible" });
    return box.textContent();
  };
  const noError = async () => {
    check(`${current}: no error shown`, await page.locator("#error").isHidden(), await page.locator("#error").textContent());
  };

  try {
    current = "brokers";
    await go("#/brokers", "[data-testid=cluster-id]");
    const cluster = (await api("GET", "/v1/brokers")).body.cluster_id;
    check("brokers: cluster id shown", (await page.textContent("[data-testid=cluster-id]")) === cluster);
    await shot("01-brokers");

    current = "topics";
    await go("#/topics", "[data-testid=topics]");
    await page.fill("[data-testid=topic-filter] input[name=filter]", spec.topic);
    await page.click("[data-testid=topic-filter] button");
    await page.waitForSelector(`[data-testid=topics] a:text-is("${spec.topic}")`);
    const rows = await page.locator("[data-testid=topics] tbody tr").count();
    check("topics: the filter finds the topic alone", rows === 1, `${rows} rows`);
    await shot("02-topics");

    current = "create topic: bad input";
    const before = (await api("GET", "/v1/topics?limit=1000")).body.total;
    await page.fill("[data-testid=create-topic] input[name=name]", spec.topic);
    await page.click("[data-testid=create-topic] button[type=submit]");
    let message = await errorText();
    check("create an existing topic: message", message.includes("TOPIC_ALREADY_EXISTS"), message);
    await page.fill("[data-testid=create-topic] input[name=name]", "console-new-topic");
    await page.fill("[data-testid=create-topic] input[name=partitions]", "-3");
    await page.click("[data-testid=create-topic] button[type=submit]");
    await page.waitForFunction(() => document.getElementById("error").textContent.includes("partitions"));
    message = await page.textContent("#error");
    check("create with -3 partitions: message names partitions", message.includes("partitions"), message);
    await page.fill("[data-testid=create-topic] input[name=partitions]", "1");
    await page.fill("[data-testid=create-topic] textarea[name=configs]", "retention.ms=soon");
    await page.click("[data-testid=create-topic] button[type=submit]");
    await page.waitForFunction(() => document.getElementById("error").textContent.includes("INVALID_CONFIG"));
    check("create with a bad config: message", true);
    await shot("03-topics-bad-input");
    const after = (await api("GET", "/v1/topics?limit=1000")).body.total;
    check("bad topic input changed nothing", before === after, `${before} -> ${after}`);

    current = "topic detail";
    await go(`#/topics/${encodeURIComponent(spec.topic)}`, "[data-testid=partitions]");
    check("topic detail: name", (await page.textContent("[data-testid=topic-name]")) === spec.topic);
    await shot("04-topic");

    current = "messages";
    const m = spec.message;
    await go(`#/topics/${encodeURIComponent(spec.topic)}/messages`, "[data-testid=message-form]");
    await page.selectOption("[data-testid=message-form] select[name=partition]", String(m.partition));
    await page.fill("[data-testid=message-form] input[name=offset]", String(m.offset));
    await page.click("[data-testid=message-form] button[type=submit]");
    const first = page.locator("[data-testid=messages] tbody tr").first();
    await first.waitFor();
    check("messages: the first row is the offset asked for", (await first.getAttribute("data-offset")) === String(m.offset));
    const text = await first.textContent();
    check("messages: its value is shown decoded", text.includes(m.text), text);
    await noError();
    await shot("05-messages");

    current = "messages: bad input";
    const bodyBefore = await page.locator("[data-testid=messages] tbody").innerHTML();
    await page.fill("[data-testid=message-form] input[name=offset]", "-1");
    await page.click("[data-testid=message-form] button[type=submit]");
    message = await errorText();
    check("negative offset: message", message.includes("offset") && message.includes("-1"), message);
    await page.fill("[data-testid=message-form] input[name=offset]", "");
    await page.fill("[data-testid=message-form] input[name=timestamp]", "yesterday noon");
    await page.click("[data-testid=message-form] button[type=submit]");
    await page.waitForFunction(() => document.getElementById("error").textContent.includes("timestamp"));
    check("malformed timestamp: message", true);
    check("bad reads left the rows alone", (await page.locator("[data-testid=messages] tbody").innerHTML()) === bodyBefore);
    await shot("06-messages-bad-input");

    current = "groups";
    await go("#/groups", "[data-testid=groups]");
    await page.waitForSelector(`[data-testid=groups] a:text-is("${spec.group}")`);
    await shot("07-groups");

    current = "group";
    await go(`#/groups/${encodeURIComponent(spec.group)}`, "[data-testid=offsets]");
    for (const [partition, lag] of Object.entries(spec.lags)) {
      const cell = page.locator(`[data-testid=offsets] tr[data-partition="${spec.topic}-${partition}"] [data-testid=lag]`);
      const shown = (await cell.textContent()).trim();
      check(`group: lag of partition ${partition} is the admin client's`, shown === String(lag), `${shown} != ${lag}`);
    }
    await shot("08-group");

    current = "reset: bad input";
    const committedBefore = (await api("GET", `/v1/groups/${encodeURIComponent(spec.group)}`)).body.offsets;
    await page.selectOption("[data-testid=reset-form] select[name=to]", "offset");
    await page.fill("[data-testid=reset-form] input[name=offset]", "-1");
    await page.click("[data-testid=dry-run]");
    message = await errorText();
    check("reset to offset -1: message", message.includes("offset"), message);
    await page.selectOption("[data-testid=reset-form] select[name=to]", "timestamp");
    await page.fill("[data-testid=reset-form] input[name=timestamp]", "31/02/2025");
    await page.click("[data-testid=dry-run]");
    await page.waitForFunction(() => document.getElementById("error").textContent.includes("timestamp"));
    await page.selectOption("[data-testid=reset-form] select[name=to]", "earliest");
    await page.fill("[data-testid=reset-form] input[name=topics]", "no-such-topic");
    await page.click("[data-testid=dry-run]");
    await page.waitForFunction(() => document.getElementById("error").textContent.includes("does not exist"));
    check("reset of an unknown topic: message", true);
    check("bad resets: execute stays disabled", await page.locator("[data-testid=execute]").isDisabled());
    const committedAfter = (await api("GET", `/v1/groups/${encodeURIComponent(spec.group)}`)).body.offsets;
    check("bad resets committed nothing", JSON.stringify(committedBefore) === JSON.stringify(committedAfter));

    current = "reset: dry run";
    await page.fill("[data-testid=reset-form] input[name=topics]", "");
    await page.click("[data-testid=dry-run]");
    await page.waitForSelector("[data-testid=plan] table");
    await noError();
    const planText = await page.textContent("[data-testid=plan]");
    check("dry run: says nothing is committed", planText.includes("Dry run"), planText);
    const still = (await api("GET", `/v1/groups/${encodeURIComponent(spec.group)}`)).body.offsets;
    check("dry run committed nothing", JSON.stringify(still) === JSON.stringify(committedBefore));
    await shot("09-reset-dry-run");

    current = "reset: for real";
    await page.click("[data-testid=execute]");
    await page.locator("#notice").waitFor({ state: "visible" });
    for (const partition of Object.keys(spec.lags)) {
      const row = page.locator(`[data-testid=offsets] tr[data-partition="${spec.topic}-${partition}"]`);
      const committed = (await row.locator("td").nth(2).textContent()).trim();
      check(`reset: partition ${partition} committed at 0`, committed === "0", committed);
    }
    await shot("10-reset-done");

    current = "timeline";
    await go(`#/groups/${encodeURIComponent(spec.group)}/timeline`, "[data-testid=timeline-chart]");
    const gens = await page.$$eval("[data-testid=generations] tbody tr", (trs) =>
      trs.map((tr) => ({
        generation: tr.getAttribute("data-generation"),
        members: tr.children[3].textContent,
        left: tr.children[5].textContent,
      })));
    const [a, b] = spec.members;
    // A member is shown as "<member id> (<client id>) <topic>: <partitions>": match the
    // client id in its parentheses, since the topic's name may begin with a client id too.
    const lists = (text, clientId) => text.includes(`(${clientId})`);
    const both = gens.findIndex((g) => lists(g.members, a) && lists(g.members, b));
    check("timeline: a generation with both members (the first rebalance)", both >= 0, JSON.stringify(gens));
    const after2 = gens.slice(both + 1).find((g) => lists(g.left, b));
    check("timeline: a later one where the second member left (the second rebalance)",
      after2 && lists(after2.members, a) && !lists(after2.members, b) && after2.left.includes("left"),
      JSON.stringify(gens));
    const labels = await page.$$eval("[data-testid=timeline-chart] text[data-generation]", (ts) => ts.map((t) => t.textContent));
    check("timeline chart: a mark per generation", labels.length === gens.length, JSON.stringify(labels));
    const lanes = await page.$$eval("[data-testid=timeline-chart] text[data-member]", (ts) => ts.map((t) => t.textContent));
    check("timeline chart: a lane per member", lanes.some((l) => l.startsWith(a)) && lanes.some((l) => l.startsWith(b)), JSON.stringify(lanes));
    await shot("11-timeline");

    current = "follow live";
    const f = spec.follow;
    await go(`#/topics/${encodeURIComponent(spec.topic)}/messages`, "[data-testid=message-form]");
    await page.selectOption("[data-testid=message-form] select[name=partition]", String(f.partition));
    await page.fill("[data-testid=message-form] input[name=offset]", String(f.offset));
    await page.click("[data-testid=message-form] button[type=submit]");
    await page.waitForFunction((o) => document.querySelector("[data-testid=message-status]").textContent.includes(`next offset ${o}`), f.offset);
    const polling = page.waitForRequest((r) => r.url().includes("wait_ms="));
    await page.check("[data-testid=follow]");
    await polling;
    say({ event: "follow-waiting" }); // the test produces one record now
    const live = page.locator(`[data-testid=messages] tbody tr[data-offset="${f.offset}"]`);
    await live.waitFor({ timeout: 30000 });
    const liveText = await live.textContent();
    check("follow live: the record produced meanwhile appears", liveText.includes(f.text), liveText);
    await shot("12-follow-live");
    await page.uncheck("[data-testid=follow]");

    current = "controls";
    await go("#/controls", "[data-testid=faults]");
    await page.fill("[data-testid=fault-form] input[name=api]", "Nope");
    await page.fill("[data-testid=fault-form] input[name=error]", "NOT_LEADER_OR_FOLLOWER");
    await page.click("[data-testid=fault-form] button[type=submit]");
    message = await errorText();
    check("a fault for an unknown API: message", message.includes("api"), message);
    check("the bad fault was not added", (await api("GET", "/v1/faults")).body.faults.length === 0);
    await shot("13-controls");

    check("no script error on any page", consoleErrors.length === 0, consoleErrors.join("; "));
  } catch (e) {
    try { await shot("failed-" + current.replace(/[^a-z0-9]+/gi, "-")); } catch (_) { /* best effort */ }
    say({ event: "failed", check: current, error: String(e && e.message ? e.message : e) });
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  say({ event: "failed", check: current, error: String(e) });
  process.exitCode = 1;
});
