#!/usr/bin/env python3
"""Memory of the real window at idle: `make bench-memory` (run under Xvfb by the Makefile).

Starts the app binary with a fresh profile (temporary XDG folders, no LLM reachable, the
built-in servers on), waits until the whole process tree has been idle for a while, then
prints RSS and PSS per process (main, WebKit's web and network processes, each MCP server)
and the total, from /proc/<pid>/smaps_rollup. PSS counts a shared page once across the
processes that share it, so the PSS total is what the app really costs.

A benchmark, not a test: it prints numbers and exits 0 unless the app could not start.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SETTLE_SECONDS = 10  # at least this long after start before measuring
IDLE_TICKS = 5  # clock ticks of CPU over one second below which the tree counts as idle
TIMEOUT = 120


def stat(pid):
    """The fields of /proc/<pid>/stat after the command (state first), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # the command is in parentheses and may hold spaces: split after the last ')'
    return text[text.rfind(")") + 2 :].split()


def children_of():
    """Every process's parent, read once from /proc."""
    parents = {}
    for d in os.listdir("/proc"):
        fields = d.isdigit() and stat(d)
        if fields:
            parents[int(d)] = int(fields[1])
    return parents


def tree(root):
    parents = children_of()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(p for p, parent in parents.items() if parent == pid)
    return out


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        fields = stat(pid)
        if fields:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def memory(pid):
    """(RSS, PSS) in KiB, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            rows = dict(
                (line.split(":")[0], int(line.split()[1]))
                for line in f
                if line.split(":")[0] in ("Rss", "Pss")
            )
        return rows.get("Rss", 0), rows.get("Pss", 0)
    except (OSError, ValueError):
        return None


def label(pid, main):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None
    if not argv:
        return None
    name = os.path.basename(argv[0])
    if pid == main:
        return "main (switchboard)"
    if "WebKitWebProcess" in name:
        return "WebKit web process"
    if "WebKitNetworkProcess" in name:
        return "WebKit network process"
    if "mcp-server" in argv and argv.index("mcp-server") + 1 < len(argv):
        return f"server: {argv[argv.index('mcp-server') + 1]}"
    if name == "switchboard-mcp" and len(argv) > 1:
        return f"server: {argv[1]}"
    return name


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench-memory.py PATH-TO-switchboard")
    exe = os.path.abspath(sys.argv[1])
    home = tempfile.mkdtemp(prefix="switchboard-memory-")
    env = dict(os.environ)
    for var, sub in (
        ("XDG_DATA_HOME", "data"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_CACHE_HOME", "cache"),
    ):
        env[var] = os.path.join(home, sub)
    config = os.path.join(home, "config", "dev.switchboard.desktop")
    os.makedirs(config)
    # port 9 (discard) is closed: no LLM is reachable, as on a fresh machine without Ollama
    with open(os.path.join(config, "settings.json"), "w") as f:
        json.dump({"llmUrl": "http://127.0.0.1:9"}, f)
    app = subprocess.Popen(
        [exe],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    started = time.monotonic()
    try:
        last = None
        while True:
            time.sleep(1)
            if app.poll() is not None:
                sys.exit(f"the app exited ({app.returncode}) before it was idle")
            pids = tree(app.pid)
            ticks = cpu_ticks(pids)
            idle = last is not None and ticks - last < IDLE_TICKS
            last = ticks
            waited = time.monotonic() - started
            if waited >= SETTLE_SECONDS and idle and len(pids) > 1:
                break
            if waited > TIMEOUT:
                print(f"(not idle after {TIMEOUT} s; measuring anyway)")
                break
        rows = []
        for pid in tree(app.pid):
            name, mem = label(pid, app.pid), memory(pid)
            if name and mem and mem[0] > 0:
                rows.append((name, pid) + mem)
        rows.sort(key=lambda r: -r[3])
        print(f"idle after {time.monotonic() - started:.0f} s; {len(rows)} processes")
        print(f"{'process':32} {'pid':>7} {'RSS MiB':>9} {'PSS MiB':>9}")
        for name, pid, rss, pss in rows:
            print(f"{name:32} {pid:>7} {rss / 1024:>9.1f} {pss / 1024:>9.1f}")
        total_rss = sum(r[2] for r in rows)
        total_pss = sum(r[3] for r in rows)
        print(f"{'total':32} {'':>7} {total_rss / 1024:>9.1f} {total_pss / 1024:>9.1f}")
    finally:
        try:
            os.killpg(app.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            app.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(app.pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", home])


if __name__ == "__main__":
    main()
