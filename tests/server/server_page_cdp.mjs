// tests/server/server_page_cdp.mjs BROWSER URL PROFILE_DIR — opens URL in headless Chromium, waits in real time
// (up to 120 s) until the page's first reply is marked finished (data-done="1"), and prints that reply's
// text as JSON. Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: it
// reads commands on fd 3 and writes replies on fd 4, each a JSON message ended by a NUL byte), so no
// virtual-time guess decides when the stream has ended.
import { spawn } from "node:child_process";

const [browserPath, url, profileDir] = process.argv.slice(2);
const browser = spawn(browserPath, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    `--user-data-dir=${profileDir}`, "--remote-debugging-pipe", "about:blank",
], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let browserLog = "";
browser.stderr.on("data", (chunk) => { browserLog += chunk; });

const pending = new Map();  // message id -> {resolve, reject}
let nextId = 1;
let unread = "";
browser.stdio[4].on("data", (chunk) => {
    unread += chunk.toString("utf8");
    let end;
    while ((end = unread.indexOf("\0")) >= 0) {
        const message = JSON.parse(unread.slice(0, end));
        unread = unread.slice(end + 1);
        const waiter = pending.get(message.id);
        if (!waiter) continue;  // an event, or a reply nobody waits for
        pending.delete(message.id);
        if (message.error) waiter.reject(new Error(JSON.stringify(message.error)));
        else waiter.resolve(message.result);
    }
});

function command(method, params = {}, sessionId = undefined) {
    const id = nextId++;
    browser.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + "\0");
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function fail(why) {
    console.error(why);
    console.error("chromium's log ends with:\n" + browserLog.slice(-2000));
    browser.kill("SIGKILL");
    process.exit(1);
}
browser.on("exit", (code) => { if (!finished) fail(`chromium exited (${code}) before the reply finished`); });
let finished = false;

const readReply = `(() => {
    const done = document.querySelector('#reply-1[data-done="1"]');
    if (done) return {done: true, text: done.textContent};
    const error = document.querySelector('#log .error');
    return {done: false, error: error ? error.textContent : null,
            log: (document.getElementById("log") || document.body).outerHTML};
})()`;

try {
    const { targetId } = await command("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await command("Target.attachToTarget", { targetId, flatten: true });
    await command("Page.navigate", { url }, sessionId);
    const deadline = Date.now() + 120_000;
    let last = null;
    while (Date.now() < deadline) {
        const { result } = await command("Runtime.evaluate", { expression: readReply, returnByValue: true }, sessionId);
        last = result.value;
        if (last && last.done) {
            finished = true;
            console.log(JSON.stringify(last.text));
            await command("Browser.close").catch(() => {});
            process.exit(0);
        }
        if (last && last.error) fail("the page shows an error: " + last.error);
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
    fail("no finished reply after 120 s; the page's log is:\n" + (last ? String(last.log).slice(0, 2000) : "(none)"));
} catch (err) {
    fail("DevTools command failed: " + err.message);
}
