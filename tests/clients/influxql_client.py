"""The real InfluxDB 1.x Python client (`influxdb`) reading us as Grafana does:
the meta queries of Grafana's query editor, a dashboard panel's
`GROUP BY time(5m) fill(null)` with Grafana's time filter, by GET and POST,
and a chunked raw read. Answers are checked against the readings written.

    python influxql_client.py http://127.0.0.1:PORT TOKEN [--written-from EPOCH_SECONDS]

Run by scripts/test against `ingester-local serve`. Exits non-zero with the
reason on the first mismatch.
"""
import json
import sys
import time
import urllib.parse
import urllib.request

from influxdb import InfluxDBClient

base, token = sys.argv[1], sys.argv[2]
url = urllib.parse.urlparse(base)
# Two hours back, on a 5-minute boundary (the panel's windows): inside the accepted window.
# `--written-from START`: the readings below were written from START by the caller
# (the dashboard function serves no writes; functions/dashboard/tests/influxql_client.rs).
written_from = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--written-from" else None
start = written_from or (int(time.time()) // 300 - 25) * 300
temps = [20.0 + (i % 9) * 0.25 for i in range(120)]


def post(readings):
    req = urllib.request.Request(f"{base}/readings", data=json.dumps(readings).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        assert json.load(r) == {"written": len(readings)}


if written_from is None:
    post([{"device_id": "py-s1", "timestamp": start + 60 * i, "room": "study", "temperature": t, "humidity": 40.0}
          for i, t in enumerate(temps)])
    post([{"device_id": "py-m1", "timestamp": start + 60 * i, "current_w": 100.0 + i} for i in range(120)])

client = InfluxDBClient(host=url.hostname, port=url.port, username="grafana", password=token, database="home")


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")
    print(f"ok {what}")


check("SHOW DATABASES", sorted(d["name"] for d in client.get_list_database()), ["home", "ingester"])
check("SHOW MEASUREMENTS", [m["name"] for m in client.get_list_measurements()], ["climate", "power"])
check("SHOW RETENTION POLICIES", [p["name"] for p in client.get_list_retention_policies()], ["autogen"])
check("SHOW TAG KEYS", [p["tagKey"] for p in client.query('SHOW TAG KEYS FROM "climate"').get_points()],
      ["device_id", "room"])
# (Other scripts may have written other devices to the same server.)
check("SHOW TAG VALUES",
      "py-s1" in [p["value"] for p in client.query('SHOW TAG VALUES FROM "climate" WITH KEY = "device_id"').get_points()],
      True)
check("SHOW TAG VALUES WHERE",
      [p["value"] for p in client.query("SHOW TAG VALUES FROM \"climate\" WITH KEY = \"room\" WHERE \"device_id\" =~ /^py-s/").get_points()],
      ["study"])
check("SHOW FIELD KEYS", ("current_w", "float") in
      [(p["fieldKey"], p["fieldType"]) for p in client.query('SHOW FIELD KEYS FROM "power"').get_points()], True)

# A Grafana panel: $timeFilter in epoch milliseconds, $__interval 5m.
a, b = start * 1000, (start + 120 * 60) * 1000 - 1
panel = (f'SELECT mean("temperature") FROM "climate" WHERE ("device_id"::tag = \'py-s1\') '
         f'AND time >= {a}ms and time <= {b}ms GROUP BY time(5m) fill(null)')
want = []
for w in range(24):
    window = temps[w * 5:(w + 1) * 5]
    want.append({"time": (start + w * 300) * 1000, "mean": sum(window) / len(window)})
for method in ("GET", "POST"):
    got = list(client.query(panel, epoch="ms", method=method).get_points())
    if len(got) != len(want) or any(g["time"] != w["time"] or abs(g["mean"] - w["mean"]) > 1e-9 for g, w in zip(got, want)):
        sys.exit(f"panel by {method}: got {got}, want {want}")
    print(f"ok panel by {method}: {len(got)} windows")

# Chunked: rows arrive in chunks the client joins.
chunks = list(client.query(f'SELECT "current_w" FROM "power" WHERE "device_id" = \'py-m1\' AND time >= {a}ms', epoch="ms",
                           chunked=True, chunk_size=25))
check("chunks of 25 rows", len(chunks), 5)
check("chunked raw rows", [r["current_w"] for c in chunks for r in c.get_points()], [100.0 + i for i in range(120)])

# A statement outside the subset: the client raises InfluxDB's error.
try:
    client.query('SELECT derivative("temperature") FROM "climate"')
    sys.exit("derivative() was answered")
except Exception as e:  # influxdb.exceptions.InfluxDBClientError
    if "not supported" not in str(e):
        sys.exit(f"unexpected error: {e}")
    print("ok unsupported function refused:", str(e)[:80])

# Without the token, a 401.
try:
    InfluxDBClient(host=url.hostname, port=url.port, database="home").query("SHOW MEASUREMENTS")
    sys.exit("a query without the token was answered")
except Exception as e:
    if "401" not in str(e) and "unauthorized" not in str(e).lower():
        sys.exit(f"unexpected error without the token: {e}")
    print("ok refused without the token")
print("ok: the influxdb client reads us as InfluxDB 1.x")
