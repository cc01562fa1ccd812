#!/usr/bin/env python3
"""--web-root under load: the server's RSS with N clients that request a large file and never
read, then one client reading at a steady rate (docs/SERVER.md, "Static files").

usage: bench/web-root/measure.py PATH/TO/ecsnet-server [--clients 128] [--file-mib 15]
                                 [--rate 1000000] [--hold 4] [-- extra server options...]

Python 3 standard library only. Each non-reading client binds its own loopback address
(127.0.0.2, 127.0.0.3, ...) so that per-address limits do not hide the total; Linux routes all
of 127.0.0.0/8 to lo. Prints one report; exits 1 when a prerequisite is missing.
"""

import argparse
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time


def fail(message):
    print(f"measure.py: {message}", file=sys.stderr)
    sys.exit(1)


def check_prerequisites(server):
    if sys.version_info < (3, 9):
        fail("needs Python 3.9 or later")
    if not sys.platform.startswith("linux") or not os.path.exists("/proc/self/status"):
        fail("needs Linux and /proc (RSS is read from /proc/PID/status)")
    if not (os.path.isfile(server) and os.access(server, os.X_OK)):
        fail(f"not an executable: {server} (build the ecsnet-server target first)")
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.2", 0))
    except OSError as e:
        fail(f"cannot bind 127.0.0.2 ({e}): the clients need distinct loopback addresses")
    finally:
        probe.close()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start_server(server, root, extra):
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [server, "--bind", "127.0.0.1", "--port", "0", "--ws-port", "0", "--web-root", root,
         "--log-level", "info", "--demo-entities", "0", *extra],
        stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            fail(f"the server exited ({process.returncode}):\n{log.read()}")
        log.seek(0)
        found = re.search(r"WebSocket listening on [0-9.]+:(\d+)", log.read())
        if found:
            return process, int(found.group(1)), log
        time.sleep(0.1)
    process.kill()
    fail("the server did not log its WebSocket port within 60 s")


def request(port, path, source="127.0.0.1"):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    return s


def status_of(s, timeout=2.0):
    s.settimeout(timeout)
    try:
        head = s.recv(64)
    except OSError:
        return "none"
    return head.split(b"\r\n", 1)[0].decode(errors="replace") if head else "closed"


def non_readers(pid, port, clients, hold):
    baseline = rss_kib(pid)
    sockets = [request(port, "/big.bin", f"127.0.{(i + 1) // 254}.{(i + 1) % 254 + 1}")
               for i in range(clients)]
    peak = baseline
    end = time.monotonic() + hold
    while time.monotonic() < end:
        peak = max(peak, rss_kib(pid))
        time.sleep(0.05)
    statuses = {}
    for s in sockets:
        status = status_of(s)
        statuses[status] = statuses.get(status, 0) + 1
        s.close()
    return baseline, peak, statuses


def slow_reader(port, expected, rate, limit):
    s = request(port, "/big.bin")
    s.setblocking(False)
    received = 0
    started = time.monotonic()
    header = b""
    body = 0
    while time.monotonic() - started < limit:
        # Paced: never ahead of `rate` bytes per second since the start.
        ahead = (received / rate) - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
        ready, _, _ = select.select([s], [], [], 0.5)
        if not ready:
            continue
        try:
            data = s.recv(16 * 1024)
        except (ConnectionResetError, BlockingIOError) as e:
            if isinstance(e, BlockingIOError):
                continue
            break
        if not data:
            break
        received += len(data)
        if b"\r\n\r\n" not in header:
            header += data
            if b"\r\n\r\n" in header:
                body = len(header.split(b"\r\n\r\n", 1)[1])
        else:
            body += len(data)
    elapsed = time.monotonic() - started
    s.close()
    status = header.split(b"\r\n", 1)[0].decode(errors="replace")
    return status, body, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("server")
    parser.add_argument("--clients", type=int, default=128)
    parser.add_argument("--file-mib", type=float, default=15.0)
    parser.add_argument("--rate", type=float, default=1_000_000, help="bytes/s of the slow reader")
    parser.add_argument("--hold", type=float, default=4.0,
                        help="seconds the non-readers are held (RSS sampled every 50 ms)")
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    args = parser.parse_args(argv)
    args.extra = extra
    check_prerequisites(args.server)

    with tempfile.TemporaryDirectory(prefix="ecsnet-web-measure-") as root:
        size = int(args.file_mib * 1024 * 1024)
        with open(os.path.join(root, "big.bin"), "wb") as f:
            f.write(os.urandom(size))
        with open(os.path.join(root, "index.html"), "w") as f:
            f.write("<title>measure</title>")
        process, port, log = start_server(args.server, root, args.extra)
        try:
            time.sleep(1.0)
            baseline, peak, statuses = non_readers(process.pid, port, args.clients, args.hold)
            print(f"server: {args.server} {' '.join(args.extra)}")
            print(f"{args.clients} non-reading GETs of a {size} B file, held {args.hold} s: "
                  f"RSS {baseline / 1024:.1f} MiB -> peak {peak / 1024:.1f} MiB "
                  f"(+{(peak - baseline) / 1024:.1f} MiB); answers: {statuses}")
            time.sleep(1.0)
            limit = size / args.rate * 2 + 10
            status, body, elapsed = slow_reader(port, size, args.rate, limit)
            print(f"a reader at {args.rate / 1e6:.2f} MB/s: {status!r}, {body} of {size} B "
                  f"({'whole' if body == size else 'CUT'}) in {elapsed:.1f} s")
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()


if __name__ == "__main__":
    main()
