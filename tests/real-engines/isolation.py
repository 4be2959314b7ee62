#!/usr/bin/env python3
"""Checks, from inside scripts/engine-sandbox.sh, that only loopback is reachable:
no interface but lo, no route out, no name resolution, and the fake model server
answering on every port the sandbox announced. Exit 0 when all hold."""

import os
import socket
import sys
import urllib.request


def main():
    failures = []
    with open("/proc/net/dev", encoding="utf-8") as f:
        ifaces = [line.split(":")[0].strip() for line in f.readlines()[2:]]
    if ifaces != ["lo"]:
        failures.append("interfaces besides lo: %s" % ifaces)
    for host, port in (("1.1.1.1", 443), ("8.8.8.8", 53)):
        try:
            socket.create_connection((host, port), timeout=2).close()
            failures.append("could connect to %s:%d" % (host, port))
        except OSError:
            pass
    try:
        socket.getaddrinfo("registry.npmjs.org", 443)
        failures.append("registry.npmjs.org resolved")
    except OSError:
        pass
    ports = [v for k, v in os.environ.items() if k.startswith("VF_FAKE_PORT_")]
    if not ports:
        failures.append("no VF_FAKE_PORT_* announced")
    for port in ports:
        try:
            urllib.request.urlopen("http://127.0.0.1:%s/__lab/health" % port, timeout=5).read()
        except OSError as exc:
            failures.append("fake server not answering on %s: %s" % (port, exc))
    for f in failures:
        print("FAIL isolation: %s" % f)
    if not failures:
        print("ok   isolation: only lo, no route out, no DNS, fake server on ports %s" % ",".join(sorted(ports)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
