#!/usr/bin/env python3
"""Bytes per reading of candidate SQLite layouts for the embedded store (issue 13).

The readings are the benchmark scenario's: 30 days of a smart meter and three
room sensors at 1 reading per minute (172,800 readings), inserted in time
order in transactions of 1000, in WAL mode; the size is the file's after a
WAL checkpoint (TRUNCATE). Python's own sqlite3, so it needs nothing but
python3. Run: `python3 scripts/sqlite-layouts.py [dir]`. The figures are in
docs/embedded-store.md.
"""
import math
import os
import random
import sqlite3
import struct
import sys
import tempfile

QUANTITIES = ["kwh_p", "kwh_n", "w", "v", "a", "temperature", "humidity",
              "pressure", "co2", "pm25", "lux", "gas", "water", "battery"]
MINUTES = 30 * 24 * 60
T0 = 1_795_219_200_000


def readings():
    """(device, ts ms, room, kind, values): a meter and three room sensors."""
    rng = random.Random(1)
    kwh_p, kwh_n = 5210.125, 812.5
    for i in range(MINUTES):
        ts = T0 + i * 60_000
        w = round(350 + 200 * math.sin(i / 50) + rng.uniform(-20, 20), 1)
        kwh_p = round(kwh_p + max(w, 0) / 60_000, 3)
        yield 1, ts, None, "power", (kwh_p, kwh_n, w)
        for d in (2, 3, 4):
            t = round(21 + 2 * math.sin(i / 300 + d) + rng.uniform(-0.2, 0.2), 2)
            h = round(45 + 5 * math.sin(i / 400 + d) + rng.uniform(-1, 1), 1)
            yield d, ts, d, "climate", (t, h)


def thousandths(v):
    """v as an integer count of thousandths when that is exact, else v."""
    s = round(v * 1000)
    return s if s / 1000 == v else v


def f32_order(v):
    b = struct.unpack(">I", struct.pack(">f", v))[0]
    return (~b) & 0xFFFFFFFF if b & 0x80000000 else b | 0x80000000


def zaddr(ts, t, h):
    """The 96-bit climate Z-address of keys::zorder, as 12 bytes."""
    if t is None or h is None:
        return None
    t = t / 1000 if isinstance(t, int) else t
    h = h / 1000 if isinstance(h, int) else h
    dims = [ts // 1000, f32_order(t), f32_order(h)]
    z = 0
    for k in range(31, -1, -1):
        for v in dims:
            z = (z << 1) | ((v >> k) & 1)
    return z.to_bytes(12, "big")


def measure(directory, name, schema, place, scale=True):
    path = os.path.join(directory, name + ".db")
    for ext in ("", "-wal", "-shm"):
        if os.path.exists(path + ext):
            os.remove(path + ext)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.create_function("zaddr", 3, zaddr, deterministic=True)
    db.executescript(schema)
    pending, n = {}, 0
    for device, ts, room, kind, values in readings():
        values = tuple(thousandths(v) if scale else v for v in values)
        for sql, row in place(device, ts, room, kind, values):
            pending.setdefault(sql, []).append(row)
        n += 1
        if n % 1000 == 0:
            for sql, rows in pending.items():
                db.executemany(sql, rows)
            db.commit()
            pending = {}
    for sql, rows in pending.items():
        db.executemany(sql, rows)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    size = os.path.getsize(path)
    print(f"| {name} | {size:,} | {size / n:.1f} |")


def wide_row(device, ts, room, kind, values):
    cols = [None] * len(QUANTITIES)
    if kind == "power":
        cols[0:3] = values
    else:
        cols[5:7] = values
    return (device, ts, room, *cols)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    cols = ", ".join(QUANTITIES)
    marks = ", ".join("?" * (3 + len(QUANTITIES)))
    wide = f"CREATE TABLE r (device INTEGER NOT NULL, ts INTEGER NOT NULL, room INTEGER, {cols}, PRIMARY KEY (device, ts)) WITHOUT ROWID;"
    z_index = "CREATE INDEX r_z ON r (device, zaddr(ts, temperature, humidity)) WHERE temperature IS NOT NULL AND humidity IS NOT NULL;"
    time_index = "CREATE INDEX r_time ON r (ts, device);"
    insert = f"INSERT INTO r VALUES ({marks})"
    one = lambda *r: [(insert, wide_row(*r))]
    print("| layout | bytes | bytes per reading |\n|---|---|---|")
    measure(directory, "wide, REAL values", wide, one, scale=False)
    measure(directory, "wide, exact thousandths as INTEGER", wide, one)
    measure(directory, "wide, thousandths, + (ts, device)", wide + time_index, one)
    measure(directory, "wide, thousandths, + Z expression index", wide + z_index, one)
    measure(directory, "wide, thousandths, + Z + (ts, device)", wide + z_index + time_index, one)
    family = """
    CREATE TABLE power (device INTEGER NOT NULL, ts INTEGER NOT NULL, room INTEGER, kwh_p, kwh_n, w, v, a, PRIMARY KEY (device, ts)) WITHOUT ROWID;
    CREATE TABLE climate (device INTEGER NOT NULL, ts INTEGER NOT NULL, room INTEGER, temperature, humidity, pressure, co2, pm25, lux, PRIMARY KEY (device, ts)) WITHOUT ROWID;
    CREATE INDEX climate_z ON climate (device, zaddr(ts, temperature, humidity)) WHERE temperature IS NOT NULL AND humidity IS NOT NULL;
    """

    def by_family(device, ts, room, kind, values):
        if kind == "power":
            return [("INSERT INTO power VALUES (?,?,?,?,?,?,NULL,NULL)", (device, ts, room, *values))]
        return [("INSERT INTO climate VALUES (?,?,?,?,?,NULL,NULL,NULL,NULL)", (device, ts, room, *values))]

    measure(directory, "a table per family, thousandths, + Z", family, by_family)


if __name__ == "__main__":
    main()
