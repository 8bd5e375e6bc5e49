"""The dashboard in a real browser (issue 15): headless Chromium (Debian's
chromium and chromium-driver) driven by Selenium, against `ingester-local
serve` on 127.0.0.1 with a token. It signs in through the page's form,
loads each page, and checks that the room and device names are there, that
each chart has the expected number of points, that renaming and placing a
device in a room work through the page's form (the PUT route with the
session cookie), that the pages fit
390 px and can be used from the keyboard, and that the console shows no
errors. With SCREENSHOTS=dir it saves the overview and a device page at
desktop and phone widths there.

Usage: dashboard.py <ingester-local binary>
"""

import datetime
import json
import re
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

TOKEN = "browser-token"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"port {port} did not open")


def readings(now):
    """Two days of a bedroom and a kitchen sensor and a meter, every 5 minutes."""
    out = []
    plug = 40.0
    gas = [4021.117]
    p1 = [4021.117, 3817.25]
    for i in range(576, 0, -1):
        t = now - datetime.timedelta(minutes=5 * i)
        ts = t.strftime("%Y-%m-%dT%H:%M:%SZ")
        h = t.hour + t.minute / 60
        out.append({"device_id": "sensor-bedroom", "timestamp": ts, "type": "climate", "room": "bedroom",
                    "temperature": round(19 + (h % 6) / 3, 2), "humidity": 45.0})
        out.append({"device_id": "sensor-kitchen", "timestamp": ts, "type": "climate", "room": "kitchen",
                    "temperature": round(21 + (h % 4) / 4, 2), "humidity": 55.0})
        out.append({"device_id": "meter-1", "timestamp": ts, "type": "power",
                    "cumulative_kwh_p": round(5000 + (576 - i) * 0.02, 3),
                    "cumulative_kwh_n": round(100 + (576 - i) * 0.005, 3), "current_w": 300 + (i % 12) * 10})
        # A plug that reports its bought counter alone (Tasmota's ENERGY.Total).
        plug += 0.0075 * (1 + i % 3)
        out.append({"device_id": "plug-1", "timestamp": ts, "type": "power",
                    "cumulative_kwh_p": round(plug, 4), "current_w": 90})
        # A gas meter (DSMR's, every 5 minutes), heating mornings and evenings.
        if 6 <= t.hour < 9 or 17 <= t.hour < 22:
            gas[0] += 0.011 * (1 + i % 2)
        out.append({"device_id": "gas-1", "timestamp": ts, "type": "meter", "gas_m3": round(gas[0], 3)})
        # A two-tariff P1 meter with its gas (issue 79): tariff 1 from 07:00 to 23:00,
        # tariff 2 at night, its registers and their sum in each telegram.
        if 7 <= t.hour < 23:
            p1[0] += 0.03 + 0.01 * (i % 3)
        else:
            p1[1] += 0.02
        out.append({"device_id": "p1", "timestamp": ts, "type": "power",
                    "cumulative_kwh_p": round(p1[0] + p1[1], 3), "cumulative_kwh_p_t1": round(p1[0], 3),
                    "cumulative_kwh_p_t2": round(p1[1], 3), "current_w": 350 + (i % 7) * 40,
                    "gas_m3": round(gas[0] + 812.5, 3)})
    return out


def get_json(port, path):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def post(port, batch):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/readings", data=json.dumps(batch).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 200, r.status


def post_lines(port, text):
    """Line protocol, as Zigbee2MQTT's and Tasmota's readings come: no room."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/write?precision=s", data=text.encode(),
        headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 204, r.status


def browser(zone=None):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--hide-scrollbars", f"--user-data-dir={tempfile.mkdtemp()}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    env = dict(os.environ, TZ=zone) if zone else None
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver", env=env))


def console_errors(driver):
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    for e in errors:
        print("console:", e["message"])
    return errors


def main():
    binary = sys.argv[1]
    port = free_port()
    server = subprocess.Popen([binary, "serve", "--memory", "--addr", f"127.0.0.1:{port}", "--token", TOKEN,
                               "--price-per-kwh", "0.30", "--price-per-kwh-t1", "0.22", "--price-per-kwh-t2", "0.41"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = None
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    try:
        wait_port(port)
        now = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
        data = readings(now)
        for k in range(0, len(data), 900):
            post(port, data[k:k + 900])
        base = f"http://127.0.0.1:{port}"
        driver = browser()
        driver.set_window_size(1280, 1000)

        # Reads need the token: the sign-in page, no data, then the form.
        driver.get(base + "/")
        check("bedroom" not in driver.page_source, "no data before signing in")
        driver.find_element(By.ID, "token").send_keys(TOKEN + Keys.ENTER)
        time.sleep(0.5)
        names = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".name")]
        for name in ["bedroom", "kitchen", "meter-1", "sensor-bedroom", "sensor-kitchen"]:
            check(name in names, f"overview names {name}")
        sparks = driver.find_elements(By.CSS_SELECTOR, ".room svg.spark")
        check(len(sparks) == 2, "a sparkline per room")
        check(console_errors(driver) == [], "overview console")
        if os.environ.get("SCREENSHOTS"):
            driver.save_screenshot(os.path.join(os.environ["SCREENSHOTS"], "overview-desktop.png"))
        # A gas meter's table says m³, no kWh: yesterday's (UTC) is what /energy answers.
        driver.get(base + "/?tz=UTC")
        gas = driver.find_element(By.CSS_SELECTOR, 'table[data-device="gas-1"]')
        check("Gas (m³)" in gas.text and "kWh" not in gas.text, f"the gas meter's table: {gas.text!r}")
        # The page's yesterday: midnight as the page was drawn, not as the data was made.
        midnight = datetime.datetime.now(datetime.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        q = urllib.parse.urlencode({"from": (midnight - datetime.timedelta(days=1)).isoformat(),
                                    "to": midnight.isoformat(), "bucket": "1d"})
        api = get_json(port, f"/devices/gas-1/energy?{q}")
        shown = float(gas.find_element(By.CSS_SELECTOR, 'tr[data-period="Yesterday"] .gas').get_attribute("data-m3"))
        check(abs(shown - api["m3_gas"]) < 1e-9 and shown > 0.1, f"gas yesterday: {shown} shown, {api}")
        # A gas meter's own bars (issue 79): m³ per hour, day and month, in the gas colour,
        # adding up to what /energy answers; the bar under the pointer in m³.
        driver.get(base + "/ui/devices/gas-1?tz=UTC")
        for key, bucket in [("gas-hours", "1h"), ("gas-days", "1d")]:
            fig = driver.find_element(By.CSS_SELECTOR, f'figure[data-chart="{key}"]')
            check(fig.get_attribute("data-unit") == "m³" and fig.get_attribute("data-flow") == "gas", f"{key}: m³ of gas")
            bars = json.loads(fig.get_attribute("data-values"))
            frm = datetime.datetime.fromtimestamp(int(fig.get_attribute("data-from")) / 1000, datetime.timezone.utc)
            to = datetime.datetime.fromtimestamp(int(fig.get_attribute("data-to")) / 1000, datetime.timezone.utc)
            q = urllib.parse.urlencode({"from": frm.isoformat(), "to": to.isoformat(), "bucket": bucket})
            api = get_json(port, f"/devices/gas-1/energy?{q}")
            summed = sum(b[2] for b in bars)
            check(abs(summed - api["m3_gas"]) < 1e-6 and summed > 0, f"{key}: bars {summed} against /energy {api['m3_gas']}")
            fills = {r.get_attribute("fill") for r in fig.find_elements(By.CSS_SELECTOR, ".wide svg rect")}
            check("#B45309" in fills and "#B91C1C" not in fills, f"{key}: the gas colour, not electricity's: {fills}")
        fig = driver.find_element(By.CSS_SELECTOR, 'figure[data-chart="gas-hours"]')
        webdriver.ActionChains(driver).move_to_element(fig.find_element(By.CSS_SELECTOR, ".wide svg")).perform()
        time.sleep(0.2)
        tip = fig.find_element(By.CSS_SELECTOR, ".tip").text
        check("m³ gas" in tip and "kWh" not in tip, f"the gas bar under the pointer: {tip!r}")
        check(console_errors(driver) == [], "gas meter console")
        if os.environ.get("SCREENSHOTS"):
            driver.save_screenshot(os.path.join(os.environ["SCREENSHOTS"], "gas-desktop.png"))

        # A two-tariff P1 meter with gas (issue 79): one meter, each tariff's kWh in a
        # column of its own at its own price, tariff 2 on top of its bars, its gas beside.
        driver.get(base + "/ui/devices/p1?tz=UTC")
        table = driver.find_element(By.CSS_SELECTOR, "#energy table.energy-totals")
        heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
        check(heads == ["Period", "Bought (kWh)", "Tariff 1 (kWh)", "Tariff 2 (kWh)", "Cost (EUR)", "Gas (m³)"],
              f"the P1 meter's columns: {heads}")
        row = table.find_element(By.CSS_SELECTOR, 'tr[data-period="Yesterday"]')
        kwh = lambda css: float(row.find_element(By.CSS_SELECTOR, css).get_attribute("data-kwh"))
        t1, t2, bought = kwh('[data-tariff="1"]'), kwh('[data-tariff="2"]'), kwh(".bought")
        yesterday = urllib.parse.urlencode({"from": (midnight - datetime.timedelta(days=1)).isoformat(),
                                            "to": midnight.isoformat(), "bucket": "1d"})
        api = get_json(port, f"/devices/p1/energy?{yesterday}")
        check(abs(t1 - api["kwh_bought_t1"]) < 1e-9 and abs(t2 - api["kwh_bought_t2"]) < 1e-9 and t1 > 1 and t2 > 0.5,
              f"yesterday's tariffs: {t1}, {t2} shown, {api}")
        check(abs(bought - (t1 + t2)) < 1e-6, f"the whole is its tariffs: {bought} = {t1} + {t2}")
        cost = float(row.find_element(By.CSS_SELECTOR, ".cost").text)
        check(abs(cost - (0.22 * t1 + 0.41 * t2)) <= 0.005 + 1e-9, f"each tariff at its price: {cost}")
        fig = driver.find_element(By.CSS_SELECTOR, 'figure[data-chart="energy-hours"]')
        fills = fig.find_element(By.CSS_SELECTOR, ".wide svg").get_attribute("innerHTML")
        check("#6D28D9" in fills and "#B91C1C" in fills, "tariff 2 on top of the bought bars")
        check(fig.get_attribute("data-tariffs") is not None, "the hour bars know the tariffs")
        webdriver.ActionChains(driver).move_to_element(fig.find_element(By.CSS_SELECTOR, ".wide svg")).perform()
        time.sleep(0.2)
        tip = fig.find_element(By.CSS_SELECTOR, ".tip").text
        check("in tariff 1" in tip and "in tariff 2" in tip, f"both tariffs under the pointer: {tip!r}")
        check(bool(driver.find_elements(By.CSS_SELECTOR, 'figure[data-chart="gas-hours"]')), "and its gas bars")
        check(console_errors(driver) == [], "P1 meter console")
        if os.environ.get("SCREENSHOTS"):
            driver.get(base + "/ui/devices/p1?tz=UTC#energy")
            time.sleep(0.2)
            driver.save_screenshot(os.path.join(os.environ["SCREENSHOTS"], "p1-desktop.png"))
        driver.get(base + "/")

        # A device page over a day: a point per reading (288 in 24 hours, 5-minute steps).
        driver.get(base + "/ui/devices/meter-1?range=24h")
        fig = driver.find_element(By.CSS_SELECTOR, 'figure[data-chart="current_w"]')
        drawn = driver.execute_script(
            "return arguments[0].querySelector('polyline[stroke-width=\"2\"]').getAttribute('points').trim().split(/\\s+/).length", fig)
        check(int(fig.get_attribute("data-points")) in (287, 288), f"current_w points {fig.get_attribute('data-points')}")
        check(drawn == int(fig.get_attribute("data-points")), f"the line has its {drawn} points")
        bars = driver.find_element(By.CSS_SELECTOR, 'figure[data-chart="energy"]')
        check(int(bars.get_attribute("data-points")) in (24, 25), "hourly energy bars")
        # The value under the pointer.
        webdriver.ActionChains(driver).move_to_element(fig.find_element(By.TAG_NAME, "svg")).perform()
        time.sleep(0.2)
        check("W" in fig.find_element(By.CSS_SELECTOR, ".tip").text, "the value under the pointer")
        if os.environ.get("SCREENSHOTS"):
            driver.save_screenshot(os.path.join(os.environ["SCREENSHOTS"], "device-desktop.png"))

        # Axis labels at round local times: every time label of the day's charts is a whole hour.
        labels = driver.execute_script(
            "return Array.prototype.slice.call(document.querySelectorAll('figure .wide svg text')).map(function (t) { return t.textContent.trim(); })")
        times = [l for l in labels if len(l) == 5 and l[2] == ":"]
        check(len(times) >= 8 and all(l.endswith(":00") for l in times), f"time labels at whole hours: {times[:12]}")

        # Energy: each meter's bars (hours of yesterday and today, 30 days, 12 months) add up to
        # the totals the page shows and to what /energy answers for the same range, in the zone.
        zone = "Europe/Berlin"
        for meter in ["meter-1", "plug-1"]:
            driver.get(base + f"/ui/devices/{meter}?tz={zone}")
            for key, bucket in [("energy-hours", "1h"), ("energy-days", "1d"), ("energy-months", "1mo")]:
                fig = driver.find_element(By.CSS_SELECTOR, f'figure[data-chart="{key}"]')
                bars = json.loads(fig.get_attribute("data-values"))
                drawn = len(fig.find_elements(By.CSS_SELECTOR, ".wide svg rect"))
                summed = sum(b[2] for b in bars)
                shown = float(fig.get_attribute("data-total-bought"))
                frm = datetime.datetime.fromtimestamp(int(fig.get_attribute("data-from")) / 1000, datetime.timezone.utc)
                to = datetime.datetime.fromtimestamp(int(fig.get_attribute("data-to")) / 1000, datetime.timezone.utc)
                q = urllib.parse.urlencode({"from": frm.isoformat(), "to": to.isoformat(), "bucket": bucket, "tz": zone})
                api = get_json(port, f"/devices/{meter}/energy?{q}")
                check(abs(summed - shown) < 1e-6 and abs(api["kwh_bought"] - shown) < 1e-6 and shown > 0,
                      f"{meter} {key}: bars {summed:.4f}, total {shown:.4f}, /energy {api['kwh_bought']:.4f}")
                check(drawn >= len(bars), f"{meter} {key}: {len(bars)} bars drawn ({drawn} rects)")
                caption = fig.find_element(By.TAG_NAME, "figcaption").text
                # The caption rounds the total to 2 decimals (half away from zero, after
                # scaling, as Rust's f64::round does): within half a hundredth of it. Python's
                # own "%.2f" rounds the exact binary value and may differ in the last digit
                # when the total ends in 5 (a flake with the day's data, 2026-11-26).
                said = re.search(r"([0-9]+\.[0-9]{2}) kWh bought", caption)
                check(said is not None and abs(float(said.group(1)) - shown) <= 0.005 + 1e-9,
                      f"{meter} {key}: the caption says {caption!r} for {shown!r}")
            # Today's row, or yesterday's in the minutes after the zone's midnight
            # before a reading, when today's says "No readings".
            today = driver.find_element(By.CSS_SELECTOR, '#energy tr[data-period="Today"]')
            if not today.find_elements(By.CSS_SELECTOR, ".bought"):
                check("No readings" in today.text, f"{meter}: today without a figure says so")
                today = driver.find_element(By.CSS_SELECTOR, '#energy tr[data-period="Yesterday"]')
            cost = today.find_element(By.CSS_SELECTOR, ".cost").text
            bought = float(today.find_element(By.CSS_SELECTOR, ".bought").get_attribute("data-kwh"))
            # To the cent, whichever way a half cent is rounded.
            check(re.fullmatch(r"[0-9]+\.[0-9]{2}", cost) is not None
                  and abs(float(cost) - bought * 0.30) <= 0.005 + 1e-9,
                  f"{meter}: today's cost {cost} at 0.30 a kWh for {bought!r}")
            check(bool(driver.find_elements(By.CSS_SELECTOR, "#energy .sold")) == (meter == "meter-1"),
                  f"{meter}: a sold column only for a meter that sells")
            # The bar under the pointer.
            # The middle of yesterday and today is midnight: bars on both sides.
            fig = driver.find_element(By.CSS_SELECTOR, 'figure[data-chart="energy-hours"]')
            webdriver.ActionChains(driver).move_to_element(fig.find_element(By.CSS_SELECTOR, ".wide svg")).perform()
            time.sleep(0.2)
            tip = fig.find_element(By.CSS_SELECTOR, ".tip").text
            check("kWh bought" in tip, f"{meter}: the bar under the pointer")
            check(("kWh sold" in tip) == (meter == "meter-1"), f"{meter}: what it sold, where it sells: {tip!r}")
            check(console_errors(driver) == [], f"{meter} console")
        if os.environ.get("SCREENSHOTS"):
            driver.get(base + f"/ui/devices/meter-1?tz={zone}#energy")
            time.sleep(0.2)
            driver.save_screenshot(os.path.join(os.environ["SCREENSHOTS"], "meter-desktop.png"))

        # A year: bands of daily buckets from the rollups (two or three days hold readings).
        driver.get(base + "/ui/devices/sensor-bedroom?range=1y")
        fig = driver.find_element(By.CSS_SELECTOR, 'figure[data-chart="temperature"]')
        check(int(fig.get_attribute("data-points")) in (2, 3), f"daily buckets {fig.get_attribute('data-points')}")
        check(len(fig.find_elements(By.CSS_SELECTOR, ".wide polygon")) == 1, "a min-max band")

        # Renaming through the page: the PUT route with the session cookie.
        driver.get(base + "/ui/rooms/bedroom")
        field = driver.find_element(By.ID, "name")
        field.clear()
        field.send_keys("Bedroom upstairs" + Keys.ENTER)
        time.sleep(1.0)
        check(driver.find_element(By.CSS_SELECTOR, "h2.name").text == "Bedroom upstairs", "renamed")
        check(console_errors(driver) == [], "room console")

        # Placing a device in a room through its page: a sensor whose readings
        # name none (line protocol, as from Zigbee2MQTT), then its next reading
        # is the room's.
        post_lines(port, "climate,device=zb-hall temperature=19.25")
        driver.get(base + "/ui/devices/zb-hall")
        room = driver.find_element(By.ID, "room")
        picks = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "datalist#rooms option")]
        check(room.get_attribute("value") == "" and picks == ["bedroom", "kitchen"], f"rooms to pick {picks}")
        room.send_keys("Front hall" + Keys.ENTER)
        time.sleep(1.0)
        said = driver.find_element(By.ID, "rename-status").text
        check(said.startswith("room: character ' '"), f"a room id with a space is refused, saying why: {said}")
        room = driver.find_element(By.ID, "room")
        room.clear()
        room.send_keys("hall" + Keys.ENTER)
        time.sleep(1.0)
        said = driver.find_element(By.CSS_SELECTOR, "section p.muted").text
        check(said.startswith("Device zb-hall in hall (its page comes"), f"placed in the hall: {said}")
        post_lines(port, "climate,device=zb-hall temperature=19.5")
        check(get_json(port, "/rooms/hall")["room"]["devices"] == ["zb-hall"], "its next reading is the hall's")
        driver.get(base + "/ui/devices/zb-hall")
        check(driver.find_element(By.CSS_SELECTOR, 'p.muted a[href="/ui/rooms/hall"]').text == "hall",
              "and the hall's page is linked")
        # The refused room's 400 is the one message the console may show.
        unexpected = [e for e in console_errors(driver) if "/devices/zb-hall - Failed to load resource: " \
                      "the server responded with a status of 400" not in e["message"]]
        check(unexpected == [], "placing console")

        # Keyboard: the first Tab reaches a link.
        driver.get(base + "/")
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        check(driver.switch_to.active_element.tag_name == "a", "Tab reaches a link")

        # The viewer's zone: a browser in Tokyo asked for a page without `tz` gets Tokyo's days.
        tokyo = browser("Asia/Tokyo")
        try:
            tokyo.get(base + "/")
            tokyo.find_element(By.ID, "token").send_keys(TOKEN + Keys.ENTER)
            time.sleep(0.5)
            tokyo.get(base + "/ui/devices/meter-1")
            time.sleep(0.5)
            check("tz=Asia%2FTokyo" in tokyo.current_url, f"the viewer's zone in the address: {tokyo.current_url}")
            check("Days and months in Asia/Tokyo." in tokyo.page_source, "the meter's periods in the viewer's zone")
            check(console_errors(tokyo) == [], "console in Tokyo")
        finally:
            tokyo.quit()

        # A phone: 390 px wide, nothing wider than the screen.
        driver.set_window_size(390, 844)
        for path, shot in [("/", "overview-phone.png"), ("/ui/devices/meter-1?range=24h", "device-phone.png"),
                           ("/ui/devices/meter-1?tz=Europe/Berlin#energy", "meter-phone.png"),
                           ("/ui/devices/gas-1?tz=UTC#energy", "gas-phone.png"),
                           ("/ui/devices/p1?tz=UTC#energy", "p1-phone.png")]:
            driver.get(base + path)
            width = driver.execute_script("return document.documentElement.scrollWidth")
            inner = driver.execute_script("return window.innerWidth")
            check(width <= inner, f"{path} fits {inner} px (scrollWidth {width})")
            if os.environ.get("SCREENSHOTS"):
                driver.save_screenshot(os.path.join(os.environ["SCREENSHOTS"], shot))
        check(console_errors(driver) == [], "console")
    finally:
        if driver:
            driver.quit()
        server.terminate()
        server.wait()
    if failures:
        raise SystemExit(f"{len(failures)} browser checks failed")
    print("browser checks passed")


if __name__ == "__main__":
    main()
