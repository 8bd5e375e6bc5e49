"""Real InfluxDB clients against `ingester-local serve`: the v2 client
(`influxdb-client`) and the v1 client (`influxdb`), each with gzip and without,
write readings; they then come back through the JSON API.

    python influx_clients.py http://127.0.0.1:PORT TOKEN

Run by scripts/test. Exits non-zero with the reason on the first mismatch.
"""
import json
import sys
import time
import urllib.parse
import urllib.request

from influxdb import InfluxDBClient as V1Client
from influxdb_client import InfluxDBClient as V2Client, Point, WritePrecision
from influxdb_client.client.write_api import SYNCHRONOUS

base, token = sys.argv[1], sys.argv[2]
host, port = urllib.parse.urlparse(base).hostname, urllib.parse.urlparse(base).port
# Whole seconds an hour ago: inside the accepted window whatever the clock says.
t0 = int(time.time()) - 3600


def around_t0(device, route):
    """A device's route (`readings`, `energy`) from a minute before t0 to an hour after: the JSON answer."""
    query = urllib.parse.urlencode({
        "from": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 - 60)),
        "to": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + 3600)),
    })
    req = urllib.request.Request(f"{base}/devices/{device}/{route}?{query}",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def readings(device):
    return around_t0(device, "readings")["readings"]


def energy(device):
    return around_t0(device, "energy")


def expect(device, want):
    got = [{k: v for k, v in r.items() if k not in ("device_id",)} for r in readings(device)]
    if got != want:
        sys.exit(f"{device}: got {got}, want {want}")
    print(f"ok {device}: {len(got)} reading(s)")


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


for gzip in (False, True):
    tag = "gz" if gzip else "plain"
    # v2: the bucket API, a raw line and a Point, nanosecond and second precision.
    with V2Client(url=base, token=token, org="home", enable_gzip=gzip) as client:
        if not client.ping():
            sys.exit("v2 ping failed")
        api = client.write_api(write_options=SYNCHRONOUS)
        api.write(bucket="home", record=f"climate,device=py2-{tag},room=lab temperature=21.5,humidity=45 {t0 * 10**9}")
        api.write(bucket="home", write_precision=WritePrecision.S,
                  record=Point("power").tag("device", f"py2-meter-{tag}")
                  .field("cumulative_kwh_p", 1234.5).field("cumulative_kwh_n", 10.25).field("current_w", 350.0)
                  .time(t0 + 60, WritePrecision.S))
    expect(f"py2-{tag}", [{"timestamp": iso(t0), "type": "climate", "room": "lab", "temperature": 21.5, "humidity": 45.0}])
    expect(f"py2-meter-{tag}", [{"timestamp": iso(t0 + 60), "type": "power",
                                 "cumulative_kwh_p": 1234.5, "cumulative_kwh_n": 10.25, "current_w": 350.0}])

    # v1: as Home Assistant's integration writes (unit as measurement, entity_id tag, value and attributes).
    client = V1Client(host=host, port=port, username="homeassistant", password=token,
                      database="home_assistant", gzip=gzip)
    client.ping()
    client.create_database("home_assistant")
    ok = client.write_points([
        {"measurement": "°C", "tags": {"domain": "sensor", "entity_id": f"py1_{tag}_temperature"},
         "time": iso(t0), "fields": {"value": 19.25, "friendly_name_str": "Bedroom", "device_class_str": "temperature"}},
        {"measurement": "%", "tags": {"domain": "sensor", "entity_id": f"py1_{tag}_humidity"},
         "time": iso(t0), "fields": {"value": 51.0, "device_class_str": "humidity"}},
    ])
    if not ok:
        sys.exit("v1 write_points failed")
    expect(f"py1_{tag}_temperature", [{"timestamp": iso(t0), "type": "climate", "temperature": 19.25}])
    expect(f"py1_{tag}_humidity", [{"timestamp": iso(t0), "type": "climate", "humidity": 51.0}])

    # Home Assistant's energy counters, as its event_to_json builds them: the
    # grid meter's consumption is energy bought, its production energy sold.
    points = []
    for i, t in enumerate((t0, t0 + 1800, t0 + 3600)):
        for entity, start, step in ((f"py1_{tag}_energy_consumption", 5000.0, 0.4),
                                    (f"py1_{tag}_energy_production", 700.0, 1.25)):
            points.append({"measurement": "kWh", "tags": {"domain": "sensor", "entity_id": entity},
                           "time": iso(t), "fields": {"value": start + i * step, "device_class_str": "energy",
                                                      "state_class_str": "total_increasing",
                                                      "friendly_name_str": entity.replace("_", " ")}})
    if not client.write_points(points):
        sys.exit("v1 write_points of energy failed")
    for entity, bought, sold in ((f"py1_{tag}_energy_consumption", 0.8, 0.0),
                                 (f"py1_{tag}_energy_production", 0.0, 2.5)):
        got = energy(entity)
        if (got["kwh_bought"], got["kwh_sold"]) != (bought, sold):
            sys.exit(f"{entity}: energy {got}, want bought {bought}, sold {sold}")
        print(f"ok {entity}: bought {bought}, sold {sold}")

# A wrong token is refused by both clients.
try:
    with V2Client(url=base, token="wrong", org="home") as client:
        client.write_api(write_options=SYNCHRONOUS).write(bucket="home", record="m,device=x current_w=1")
    sys.exit("v2 with a wrong token was accepted")
except Exception as e:  # influxdb_client raises ApiException(401)
    if "401" not in str(e):
        sys.exit(f"v2 with a wrong token: {e}")
print("ok: the InfluxDB clients round-trip through the JSON API")
