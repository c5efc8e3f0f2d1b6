#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compare unio-perf with ucx_perftest on this machine, side by side.

For each test and message size, runs the Unio and the UCX server/client pairs interleaved,
each Unio run right before a UCX run of the same size (Unio, UCX, Unio, UCX, ...), then prints
for each size the median of each system and the median of the pairwise ratios (Unio / UCX:
for latency lower is better, for bandwidth higher is better).  Optionally writes a Markdown
table and a PNG plot (gnuplot) of latency and bandwidth against message size.

    usertools/unio-compare.py --tls shm --test tag_lat,tag_bw --runs 5 \\
        --png doc/img/perf-shm.png --markdown /tmp/table.md

With --netns NAME (tcp only, root) both tools run across a veth pair between two network
namespaces instead of over loopback: usertools/unio-netns.sh creates NAME-a (server,
10.99.0.1) and NAME-b (client) for the run and removes them at the end; each side is limited
to its veth (UNIO_NET_DEVICES, UCX_NET_DEVICES).

    usertools/unio-compare.py --tls tcp --netns cmp --test tag_lat,tag_bw --sizes 8,64k,1m

Both tools report ping-pong latency as half the round trip and MB/s as 2^20 bytes/s.
For put_* and get_bw a second table sets each Unio run against the memcpy of the same size
that unio-perf times on one core in the same run (into a mapped, faulted-in destination).
Needs ucx_perftest (Debian ucx-utils), taskset, and gnuplot for --png.  Standard library only.
"""

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

UCX_TLS = {"shm": "posix,self,cma", "tcp": "tcp"}
UNIO_TLS = {"shm": "shm,self", "tcp": "tcp"}
# unio-perf test -> ucx_perftest test (UCP API); *_lat: p50 latency, else bandwidth
UCX_TEST = {"tag_lat": "tag_lat", "tag_bw": "tag_bw", "am_lat": "ucp_am_lat",
            "am_bw": "ucp_am_bw", "put_lat": "ucp_put_lat", "put_bw": "ucp_put_bw",
            "get_bw": "ucp_get"}
TESTS = tuple(UCX_TEST)


def is_lat(test):
    return test.endswith("_lat")


def parse_size(text):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError("bad size '%s'" % text)
    mul = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(m.group(1)) * mul


def parse_sizes(text):
    """'8,64,4k' or '8:1m' (doubling), or both mixed."""
    sizes = []
    for item in text.split(","):
        if ":" in item:
            lo, hi = (parse_size(x) for x in item.split(":", 1))
            while lo <= hi:
                sizes.append(lo)
                lo *= 2
        else:
            sizes.append(parse_size(item))
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("empty or zero size in '%s'" % text)
    return sizes


# bytes per size and run: a second or so on this kind of machine.  tcp tag_bw moves 2 GiB:
# with 256 MiB a 1 MiB run (256 messages) ended inside TCP's ramp (tcp.md entry 16)
BUDGET = {("shm", "tag_lat"): 1 << 30, ("shm", "tag_bw"): 2 << 30,
          ("shm", "am_lat"): 1 << 30, ("shm", "am_bw"): 2 << 30,
          ("shm", "put_lat"): 1 << 30, ("shm", "put_bw"): 4 << 30, ("shm", "get_bw"): 4 << 30,
          ("tcp", "tag_lat"): 64 << 20, ("tcp", "tag_bw"): 2 << 30}


def iterations(tls, test, size, cap):
    """Enough iterations for a stable median, few enough for a second or so per size.
    At least 200, except from 4 MiB on, where the budget alone decides (at least 32): 16 MiB
    over shm moves 2 GiB in 128 tag_bw iterations."""
    floor = 200 if size < (4 << 20) else 32
    return max(floor, min(cap, BUDGET.get((tls, test), 64 << 20) // size))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_line(proc, pattern, timeout):
    """Read the server's stdout until a line matches (the server listens); else what it
    printed, for the error message."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if pattern in line:
            return None
        seen.append(line)
    return "".join(seen[-20:]) or "(nothing)"


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def veth(args, side):
    """The veth of side 0 (server, NAME-a) or 1 (client, NAME-b), as unio-netns.sh names it."""
    return "%s-v%s" % (args.netns[:12], "ab"[side])


def wrap(args, side, cmd):
    """@p cmd, run in the side's namespace with --netns."""
    if args.netns is None:
        return cmd
    return ["ip", "netns", "exec", "%s-%s" % (args.netns, "ab"[side])] + cmd


def side_env(args, side, env, var):
    """@p env, with --netns limited to the side's veth through @p var."""
    return env if args.netns is None else dict(env, **{var: veth(args, side)})


def run_unio(args, test, size, tmp):
    """One unio-perf server/client pair for one size; returns (lat_us, bw_MBps)."""
    exe = os.path.join(args.build, "app", "perf", "unio-perf")
    env = dict(os.environ, UNIO_TLS=UNIO_TLS[args.tls])
    n = iterations(args.tls, test, size, args.iters)
    w = str(min(1000, max(10, n // 10)))
    # free_port() cannot reserve the port: an outgoing connection of another process may
    # take it before the server binds it ("Address already in use"); then try another
    for attempt in range(5):
        port = str(free_port())
        common = ["-t", test, "-s", str(size), "-n", str(n), "-w", w, "-p", port, "-f",
                  "-O", str(args.window)]
        srv = subprocess.Popen(wrap(args, 0, ["taskset", "-c", args.cpus[0], exe, "-l",
                                              args.cpus[0], "--"] + common),
                               env=side_env(args, 0, env, "UNIO_NET_DEVICES"),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        msg = wait_line(srv, "waiting for a connection", 30)
        if msg is None or "Address already in use" not in msg or attempt == 4:
            break
        stop(srv)
    try:
        if msg is not None:
            raise RuntimeError("unio-perf server did not start:\n" + msg)
        out = os.path.join(tmp, "unio.json")
        cli = subprocess.run(wrap(args, 1, ["taskset", "-c", args.cpus[1], exe, "-l",
                                            args.cpus[1], "--"]
                                  + common + ["--json", out, args.host]),
                             env=side_env(args, 1, env, "UNIO_NET_DEVICES"),
                             capture_output=True, text=True, timeout=300)
        if cli.returncode != 0:
            raise RuntimeError("unio-perf client failed:\n" + cli.stdout + cli.stderr)
        srv.wait(timeout=30)
    finally:
        stop(srv)
    with open(out) as f:
        rec = json.load(f)[0]
    # put_* / get_*: unio-perf's same-run memcpy of the same size (p50, bandwidth) too
    # and the mean latency (the *_lat tests' second table)
    return (rec["lat_p50_us"] if is_lat(test) else rec["lat_avg_us"], rec["bw_MBps"],
            rec["lat_p50_us"], rec.get("memcpy_p50_us"), rec.get("memcpy_MBps"),
            rec["lat_avg_us"])


def listening(args, port, proc, timeout):
    """Whether a TCP listener on @p port shows up (in the server's namespace) while @p proc
    runs, within @p timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        out = subprocess.run(wrap(args, 0, ["ss", "-Hltn", "sport = :%s" % port]),
                             capture_output=True, text=True).stdout
        if out.strip():
            return True
        time.sleep(0.05)
    return False


def run_ucx(args, test, size):
    """One ucx_perftest pair for one size, as /work/shared/bench/ucx-run.sh runs it."""
    env = dict(os.environ, UCX_TLS=UCX_TLS[args.tls])
    n = iterations(args.tls, test, size, args.iters)
    w = str(min(1000, max(10, n // 10)))
    # ucx_perftest prints nothing when it listens: wait until ss shows its port (a fixed
    # 0.5 s was once too short: "connect() failed: Connection refused"), else try another
    for attempt in range(5):
        port = str(free_port())
        srv = subprocess.Popen(wrap(args, 0, ["taskset", "-c", args.cpus[0], "ucx_perftest",
                                              "-c", args.cpus[0], "-p", port]),
                               env=side_env(args, 0, env, "UCX_NET_DEVICES"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if listening(args, port, srv, 10):
            break
        stop(srv)
    try:
        cli = subprocess.run(wrap(args, 1, ["taskset", "-c", args.cpus[1], "ucx_perftest",
                                            args.host, "-c", args.cpus[1], "-p", port,
                                            "-t", UCX_TEST[test], "-s", str(size),
                                            "-n", str(n), "-w", w, "-f"]
                                  + ([] if is_lat(test) else ["-O", str(args.window)])),
                             env=side_env(args, 1, env, "UCX_NET_DEVICES"),
                             capture_output=True, text=True, timeout=300)
        srv.wait(timeout=30)
    finally:
        stop(srv)
    # with -f the last line: iterations typical_lat avg_lat overall_lat avg_bw
    # overall_bw avg_rate overall_rate
    line = None
    for ln in (cli.stdout + cli.stderr).splitlines():
        m = re.match(r"^(?:Final:)?\s*\d+\s+[0-9.]+\s+[0-9.]+", ln)
        if m:
            line = ln.replace("Final:", "").split()
    if cli.returncode != 0 or line is None or len(line) < 8:
        raise RuntimeError("ucx_perftest failed:\n" + cli.stdout + cli.stderr)
    lat = float(line[1]) if is_lat(test) else float(line[3])
    # the overall mean latency too: ucx_perftest's typical is the median of its last
    # report's samples only, and on a host whose TSC moves in 10 ns steps both p50s move
    # in 5 ns steps (protocols.md entry 37)
    return (lat, float(line[5]), float(line[3]))


def fmt_size(n):
    for unit, shift in (("M", 20), ("k", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def summarise(test, sizes, pairs, mean=False):
    """Per size: median Unio, median UCX, median of the pairwise ratios (@p mean: of the
    *_lat tests' mean latency instead of p50)."""
    idx = 0 if is_lat(test) else 1
    rows = []
    for size in sizes:
        u = [a[5 if mean else idx] for a, _ in pairs[size]]
        x = [b[2 if mean else idx] for _, b in pairs[size]]
        ratios = [a / b for a, b in zip(u, x) if b > 0]
        nan = float("nan")
        rows.append((size, statistics.median(u), statistics.median(x),
                     statistics.median(ratios) if ratios else nan,
                     min(ratios) if ratios else nan, max(ratios) if ratios else nan))
    return rows


def summarise_memcpy(sizes, pairs):
    """Per size, from the Unio runs that measured it: median memcpy MB/s, and the medians
    (with ranges) of Unio / memcpy as bandwidth and as p50 time (memcpy p50 / Unio p50)."""
    rows = []
    for size in sizes:
        recs = [a for a, _ in pairs[size] if len(a) > 4 and a[4]]
        if not recs:
            continue
        bw = [a[1] / a[4] for a in recs]
        p50 = [a[3] / a[2] for a in recs if a[2] > 0]
        rows.append((size, statistics.median(a[4] for a in recs), statistics.median(bw),
                     min(bw), max(bw), statistics.median(p50) if p50 else float("nan"),
                     min(p50) if p50 else float("nan"), max(p50) if p50 else float("nan")))
    return rows


def table_memcpy(test, rows, markdown=False):
    title = ("%s against a one-core memcpy of the same size in the same unio-perf run "
             "(Unio / memcpy, higher is better)" % test)
    if markdown:
        out = ["| %s size | memcpy MB/s | Unio / memcpy, bandwidth | range | "
               "Unio / memcpy, p50 | range |" % test, "|---:|---:|---:|---:|---:|---:|"]
        fmt = "| %s | %.1f | %.3f | %.2f – %.2f | %.3f | %.2f – %.2f |"
    else:
        out = [title, "%10s %14s %12s %16s %12s %16s" % ("size", "memcpy MB/s", "bw ratio",
                                                         "range", "p50 ratio", "range")]
        fmt = "%10s %14.1f %12.3f %7.2f..%-7.2f %12.3f %7.2f..%-7.2f"
    for size, m, r, lo, hi, p, plo, phi in rows:
        out.append(fmt % (fmt_size(size), m, r, lo, hi, p, plo, phi))
    return "\n".join(out)


def table_text(test, rows, mean=False):
    unit = ("mean latency (us)" if mean else "p50 latency (us)") if is_lat(test) else \
        "bandwidth (MB/s)"
    better = "lower is better" if is_lat(test) else "higher is better"
    out = ["%s, %s: median of runs, and median of pairwise Unio/UCX ratios (%s)"
           % (test, unit, better),
           "%10s %14s %14s %12s %16s" % ("size", "unio", "ucx", "unio/ucx", "ratio range")]
    for size, u, x, r, lo, hi in rows:
        out.append("%10s %14.3f %14.3f %12.3f %7.2f..%-7.2f" % (fmt_size(size), u, x, r, lo,
                                                               hi))
    return "\n".join(out)


def table_markdown(test, rows, mean=False):
    unit = ("mean latency (µs)" if mean else "p50 latency (µs)") if is_lat(test) else \
        "bandwidth (MB/s)"
    out = ["| %s size | Unio %s | UCX %s | Unio / UCX | ratio range |" % (test, unit, unit),
           "|---:|---:|---:|---:|---:|"]
    for size, u, x, r, lo, hi in rows:
        out.append("| %s | %.3f | %.3f | %.2f | %.2f – %.2f |" % (fmt_size(size), u, x, r,
                                                                 lo, hi))
    return "\n".join(out)


def plot(path, tls, summaries):
    """Latency and bandwidth against size, both systems, with gnuplot (pngcairo)."""
    if shutil.which("gnuplot") is None:
        raise RuntimeError("gnuplot not found (Debian: gnuplot-nox)")
    with tempfile.TemporaryDirectory() as tmp:
        script = ["set terminal pngcairo size 1100,420 font ',10'",
                  "set output '%s'" % path, "set multiplot layout 1,2",
                  "set logscale x 2", "set logscale y", "set grid",
                  "set key top left", "set xlabel 'message size (bytes)'",
                  "set format x '%.0b%B'", "set termoption noenhanced"]
        panels = (("tag_lat", 1, "one-way latency p50 (us)", "latency, tag_lat"),
                  ("tag_bw", 1, "bandwidth (MB/s)", "bandwidth, tag_bw"))
        for test, _, ylabel, title in panels:
            rows = summaries.get(test)
            if rows is None:
                continue
            data = os.path.join(tmp, test + ".dat")
            with open(data, "w") as f:
                for row in rows:
                    f.write("%d %g %g\n" % row[:3])
            script += ["set ylabel '%s'" % ylabel,
                       "set title '%s over %s (median of runs)'" % (title, tls),
                       "plot '%s' using 1:2 with linespoints lw 2 title 'Unio', "
                       "'%s' using 1:3 with linespoints lw 2 title 'UCX'" % (data, data)]
        script.append("unset multiplot")
        subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    cpu = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    ucx = subprocess.run(["ucx_info", "-v"], capture_output=True, text=True).stdout
    m = re.search(r"Version ([0-9.]+)", ucx)
    return "%s, %d CPUs, %s %s, UCX %s" % (cpu, os.cpu_count(), platform.system(),
                                         platform.release(), m.group(1) if m else "?")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(here, "..", "build"),
                    help="Unio build directory (default: ../build)")
    ap.add_argument("--tls", choices=sorted(UCX_TLS), default="shm")
    ap.add_argument("--test", default="tag_lat,tag_bw",
                    help="comma-separated: " + ", ".join(TESTS) + " (default tag_lat,tag_bw)")
    ap.add_argument("--sizes", type=parse_sizes,
                    default=parse_sizes("8,64,512,4k,8k,16k,32k,64k,256k,1m,4m,16m"))
    ap.add_argument("--iters", type=int, default=100000, help="most iterations per size")
    ap.add_argument("--window", type=int, default=16,
                    help="outstanding operations for the *_bw tests, both tools (-O, default 16)")
    ap.add_argument("--runs", type=int, default=3,
                    help="interleaved Unio/UCX pairs per size (default 3)")
    ap.add_argument("--lat-runs", type=int,
                    help="pairs per size for the *_lat tests (default: --runs)")
    ap.add_argument("--cpus", default="0,1", help="server CPU,client CPU (default 0,1)")
    ap.add_argument("--png", help="write the plot here")
    ap.add_argument("--markdown", help="write the Markdown tables here")
    ap.add_argument("--netns", metavar="NAME",
                    help="tcp only: run across a veth pair between namespaces NAME-a and "
                    "NAME-b, created for the run by unio-netns.sh and removed after")
    args = ap.parse_args()
    args.cpus = args.cpus.split(",")
    if args.lat_runs is None:
        args.lat_runs = args.runs
    tests = args.test.split(",")
    if (len(args.cpus) != 2 or any(t not in TESTS for t in tests) or args.runs < 1
            or args.lat_runs < 1):
        ap.error("--cpus needs two CPUs, --test takes %s, --runs and --lat-runs >= 1"
                 % ", ".join(TESTS))
    if shutil.which("ucx_perftest") is None:
        sys.exit("unio-compare: ucx_perftest not found (Debian: ucx-utils)")
    if not os.access(os.path.join(args.build, "app", "perf", "unio-perf"), os.X_OK):
        sys.exit("unio-compare: no unio-perf in %s (build first, or --build DIR)" % args.build)
    args.host = "127.0.0.1"
    if args.netns is None:
        compare(args, tests)
        return
    if args.tls != "tcp" or not re.fullmatch(r"[A-Za-z0-9_]{1,12}", args.netns):
        ap.error("--netns needs --tls tcp and a NAME of 1-12 letters, digits or _")
    netns = os.path.join(here, "unio-netns.sh")
    subprocess.run([netns, "create", args.netns], check=True, stdout=subprocess.DEVNULL)
    args.host = "10.99.0.1"
    # a SIGTERM unwinds through the finally below, which removes the namespaces
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("unio-compare: terminated"))
    try:
        compare(args, tests)
    finally:
        subprocess.run([netns, "destroy", args.netns], stdout=subprocess.DEVNULL)


def compare(args, tests):
    """Every test and size, interleaved, then the tables (and the plot)."""
    summaries = {}
    text, md = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for test in tests:
            # each Unio run right next to its UCX run of the same size: on a VM the
            # latency of both tools moves with vCPU placement over seconds, and a
            # ratio means something only when both runs saw the same placement
            runs = args.lat_runs if is_lat(test) else args.runs
            pairs = {}
            for size in args.sizes:
                pairs[size] = []
                for run in range(runs):
                    print("%s %s run %d/%d" % (test, fmt_size(size), run + 1, runs),
                          file=sys.stderr)
                    pairs[size].append((run_unio(args, test, size, tmp),
                                        run_ucx(args, test, size)))
            rows = summarise(test, args.sizes, pairs)
            summaries[test] = rows
            text.append(table_text(test, rows))
            md.append(table_markdown(test, rows))
            if is_lat(test):
                rows = summarise(test, args.sizes, pairs, mean=True)
                text.append(table_text(test, rows, mean=True))
                md.append(table_markdown(test, rows, mean=True))
            mrows = summarise_memcpy(args.sizes, pairs)
            if mrows:
                text.append(table_memcpy(test, mrows))
                md.append(table_memcpy(test, mrows, markdown=True))
    nruns = ("%d" % args.runs if args.lat_runs == args.runs or
             not any(map(is_lat, tests)) else "%d (latency %d)" % (args.runs, args.lat_runs))
    head = ("transport class %s (UNIO_TLS=%s, UCX_TLS=%s), %s interleaved Unio/UCX pairs per "
            "size, server on CPU %s, client on CPU %s%s\nmachine: %s"
            % (args.tls, UNIO_TLS[args.tls], UCX_TLS[args.tls], nruns, args.cpus[0],
               args.cpus[1], "" if args.netns is None else
               ", across a veth pair (namespaces %s-a / %s-b)" % (args.netns, args.netns),
               machine()))
    print(head + "\n\n" + "\n\n".join(text))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(head.replace("\n", "  \n") + "\n\n" + "\n\n".join(md) + "\n")
    if args.png:
        plot(args.png, args.tls, summaries)
        print("plot: %s" % args.png)


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        sys.exit("unio-compare: %s" % e)
