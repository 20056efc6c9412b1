#!/usr/bin/python3
"""The tape explorer's page (ag::to_html) in a real browser: Debian's chromium, headless, driven by
chromium-driver through python3-selenium. Run by ctest (tests/CMakeLists.txt):

    /usr/bin/python3 tests/browser/test_tape_page.py --writer build/tests/write_tape_page
                     [--next-word build/examples/next_word] [--screenshot docs/tape_explorer.png]

write_tape_page writes two pages of a small MLP (values kept, and not) and expected.json, what ag's
own backward computes. For each page this loads it from file://, steps through every node with the
controls (and the keyboard), checks the numbers shown against expected.json (each leaf's .grad
after the last step, the gradient arriving at a node whose output retained its gradient, the saved
tensors listed step by step and their running total against ag::saved_tensors), and that
the browser logged no error. With --next-word it does the same for `next_word --html` (all but the
numbers). Exits 77 (ctest's SKIPPED) when chromium, chromedriver or selenium is missing.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SKIP = 77

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError:
    webdriver = None

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def start_browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--user-data-dir=" + profile, "--window-size=1400,860"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def position(driver):
    return int(driver.find_element(By.ID, "position").get_attribute("data-step"))


def shown_values(container):
    """The values of a tensor view, all of them: its "show all" button pressed first. Returns
    (full-precision values from data-value, the text shown)."""
    for button in container.find_elements(By.CSS_SELECTOR, "button.expand"):
        if button.text.startswith("show all"):
            button.click()
    cells = container.find_elements(By.CSS_SELECTOR, "td.num")
    return [float(c.get_attribute("data-value")) for c in cells], [c.text for c in cells]


def check_numbers(what, values, texts, expected):
    check(len(values) == len(expected), f"{what}: {len(values)} values shown, {len(expected)} expected")
    check(values == expected, f"{what}: data-value {values[:4]}... differs from ag's {expected[:4]}...")
    for v, t in zip(values, texts):
        # 4 decimals, or 4 in scientific notation, as PyTorch prints them
        tol = 0.5e-4 * (abs(v) if "e" in t else 1.0) + 1e-12
        if abs(float(t) - v) > tol:
            check(False, f"{what}: shows {t} for {v!r}")
            break


def console_errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def step_through(driver, url, expected=None, values_kept=True, fused_rule=False):
    """Loads the page, steps through every node, and checks what it shows. Returns the node names in
    the order the page ran them. With fused_rule, the fused attention node (UnsafeViewBackward0,
    as PyTorch prints weights @ values, or without weights ScaledDotProductFlashAttentionForCpuBackward0,
    or with its projections CausalSelfAttentionBackward0) must show its own rule (Node::rule()), not a
    view's."""
    driver.get(url)
    n = driver.execute_script("return tape.steps.length")
    check(position(driver) == 0, f"{url}: does not start at step 0")
    check(driver.find_element(By.ID, "prev").get_attribute("disabled") is not None, "prev is enabled at step 0")
    notice = driver.find_element(By.ID, "notice")
    if values_kept:
        check(not notice.is_displayed(), "the 'values not recorded' notice shows though values were kept")
    else:
        check(notice.is_displayed() and "KeepValuesGuard" in notice.text, "no notice says how to record values")
    names = []
    fused_shown = False
    total = int(driver.find_element(By.ID, "saved-total").get_attribute("data-bytes"))
    check("saved tensors" in driver.find_element(By.ID, "saved-total").text, "the start does not say what the nodes keep")
    rows, running = 0, 0
    for k in range(1, n + 1):
        driver.find_element(By.ID, "next").click()
        check(position(driver) == k, f"next did not go to step {k}")
        # what the node keeps, and the running total: the last one plus this node's rows
        keeps = driver.find_elements(By.CSS_SELECTOR, "#details tr.keep")
        rows += len(keeps)
        running += sum(int(r.get_attribute("data-bytes")) for r in keeps)
        shown = driver.find_element(By.ID, "saved-running")
        check(int(shown.get_attribute("data-bytes")) == running,
              f"step {k}: the running total of saved bytes is {shown.get_attribute('data-bytes')}, its rows add to {running}")
        title = driver.find_element(By.ID, "step-title")
        names.append(title.get_attribute("data-name"))
        if fused_rule and names[-1] in ("UnsafeViewBackward0", "ScaledDotProductFlashAttentionForCpuBackward0",
                                        "CausalSelfAttentionBackward0"):
            rule = driver.find_element(By.ID, "details").text
            fused_shown = fused_shown or any(f in rule for f in ("causal_attention(", "causal_matmul(", "causal_attention_output(",
                                                             "causal_self_attention("))
        node = int(title.get_attribute("data-node"))
        current = driver.find_elements(By.CSS_SELECTOR, "g.node.current")
        check(len(current) == 1 and current[0].get_attribute("data-node") == str(node),
              f"step {k}: the graph does not highlight node {node}")
        if not values_kept:
            missing = driver.find_elements(By.CSS_SELECTOR, "#details .missing")
            check(len(missing) > 0, f"step {k}: no 'not recorded' note without kept values")
    check(running == total, f"{url}: the steps' saved bytes add to {running}, the start says {total}")
    if expected:
        check(total == expected["saved"]["bytes"] and rows == expected["saved"]["count"],
              f"the page lists {rows} saved tensors, {total} bytes; ag::saved_tensors: {expected['saved']}")
    else:
        check(total > 0 and rows > 0, f"{url}: the page lists no saved tensor")
    if fused_rule:
        check(fused_shown, f"{url}: no fused attention step shows the fused attention rule")
    check(driver.find_element(By.ID, "next").get_attribute("disabled") is not None, "next is enabled at the last step")
    check(len(driver.find_elements(By.CSS_SELECTOR, "g.node.done")) == n - 1, "not every node is marked done at the end")

    if expected:
        check(n == expected["steps"], f"{n} steps, expected one per node: {expected['steps']}")
        check(sorted(names) == expected["names"], f"the steps ran {sorted(names)}, expected {expected['names']}")
        for name, grad in expected["leaf_grads"].items():
            box = driver.find_element(By.CSS_SELECTOR, f'.leafgrad[data-name="{name}"] .tensor')
            values, texts = shown_values(box)
            check_numbers(f"{name}.grad after the last step", values, texts, grad)
        # the gradient arriving at h's node (click it in the graph) is h.grad
        retained = expected["retained"]
        for g in driver.find_elements(By.CSS_SELECTOR, "g.node"):
            if g.find_element(By.TAG_NAME, "title").get_attribute("textContent").startswith(retained["name"]):
                driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", g)
                break
        check(driver.find_element(By.ID, "step-title").get_attribute("data-name") == retained["name"],
              f"clicking {retained['name']} in the graph did not show its step")
        values, texts = shown_values(driver.find_element(By.CSS_SELECTOR, '#details [data-role="grad-out"]'))
        check_numbers(f"the gradient arriving at {retained['name']}", values, texts, retained["grad"])
        loss = driver.execute_script("return tape.tensors[tape.root.value].data[0]")
        check(loss == expected["loss"], f"the page's loss {loss} is not ag's {expected['loss']}")

    # the keyboard and play
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.END)
    check(position(driver) == n, "End did not go to the last step")
    body.send_keys(Keys.ARROW_LEFT)
    check(position(driver) == n - 1, "← did not go back a step")
    body.send_keys(Keys.HOME)
    check(position(driver) == 0, "Home did not go to the start")
    body.send_keys(Keys.ARROW_RIGHT)
    check(position(driver) == 1, "→ did not go forward a step")
    driver.find_element(By.ID, "play").click()
    time.sleep(2.2)
    driver.find_element(By.ID, "play").click()
    check(position(driver) >= 3, f"play did not move on (at step {position(driver)})")
    errors = console_errors(driver)
    check(not errors, f"{url}: console errors {errors}")
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writer", required=True, help="the write_tape_page program")
    ap.add_argument("--next-word", help="the next_word example, to test its --html page too")
    ap.add_argument("--screenshot", help="save a screenshot of next_word's page (or the MLP's) here")
    ap.add_argument("--screenshot-step", type=int, default=4, help="the step the screenshot shows")
    args = ap.parse_args()
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if webdriver is None:
        missing.append("python3-selenium")
    if missing:
        print("SKIPPED: needs " + ", ".join(missing) +
              " (apt-get install -y chromium chromium-driver python3-selenium)")
        return SKIP

    work = tempfile.mkdtemp(prefix="ag_tape_page_")
    try:
        subprocess.run([args.writer, work], check=True)
        with open(os.path.join(work, "expected.json")) as f:
            expected = json.load(f)
        pages = [("file://" + os.path.join(work, "tape.html"), expected, True, False),
                 ("file://" + os.path.join(work, "tape_novalues.html"), expected, False, False)]
        if args.next_word:
            page = os.path.join(work, "next_word.html")
            subprocess.run([args.next_word, "--epochs", "1", "--html", page], check=True, stdout=subprocess.DEVNULL)
            pages.append(("file://" + page, None, True, True))
        driver = start_browser(os.path.join(work, "profile"))
        try:
            for url, exp, kept, fused in pages:
                names = step_through(driver, url, exp, kept, fused)
                print(f"{os.path.basename(url)}: stepped through {len(names)} nodes")
            if args.screenshot:
                driver.set_window_size(1400, 820)
                driver.get(pages[-1][0])
                for _ in range(args.screenshot_step):
                    driver.find_element(By.ID, "next").click()
                driver.save_screenshot(args.screenshot)
                try:  # python3-pil, if present: 128 colours keep the PNG small
                    from PIL import Image
                    Image.open(args.screenshot).convert("RGB").quantize(
                        colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(args.screenshot, optimize=True)
                except ImportError:
                    pass
                print("saved", args.screenshot)
        finally:
            driver.quit()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all page checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
