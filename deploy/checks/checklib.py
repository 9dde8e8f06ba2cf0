"""Shared by the deploy checks: named checks with one log line each, and their counts."""
import os
import re
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Checks:
    def __init__(self, suite):
        self.suite = suite
        self.passed = 0
        self.failed = []

    def check(self, name, ok, detail=""):
        """Records one check; `ok` is a bool, `detail` says why it failed."""
        if ok:
            self.passed += 1
            print(f"  ok    {name}")
        else:
            self.failed.append(name)
            print(f"  FAIL  {name}{': ' + detail if detail else ''}")
        return ok

    def finish(self):
        """Prints the suite's summary, appends it to $DEPLOY_CHECK_COUNTS, and exits 1 on any failure."""
        print(f"{self.suite}: {self.passed} passed, {len(self.failed)} failed")
        counts = os.environ.get("DEPLOY_CHECK_COUNTS")
        if counts:
            with open(counts, "a") as f:
                f.write(f"{self.suite.replace(' ', '-')} {self.passed} {len(self.failed)}\n")
        sys.exit(1 if self.failed else 0)


DOCKERFILE = os.path.join(REPO, "deploy", "docker", "Dockerfile")
STACK_ENV = os.path.join(REPO, "deploy", "stack.env")


def read_env_file(path):
    """The KEY=value lines of an env file (compose's env_file, kustomize's envs, deploy/stack.env),
    without comments and blank lines."""
    env = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            env[k] = v
    return env


def stack_env():
    """deploy/stack.env: the local stack's ports, names and shared settings (deploy/README.md)."""
    return read_env_file(STACK_ENV)


_MANIFEST = None


def dump_package():
    """Package.swift as SwiftPM evaluates it (the JSON of `swift package dump-package`), read once."""
    global _MANIFEST
    if _MANIFEST is None:
        import json
        import shutil
        import subprocess
        swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
        out = subprocess.run([swift, "package", "dump-package"], cwd=REPO, check=True, capture_output=True, text=True)
        _MANIFEST = json.loads(out.stdout)
    return _MANIFEST


def executable_products():
    """The names of the executable products of Package.swift."""
    return {p["name"] for p in dump_package()["products"] if "executable" in p["type"]}


def source_strings():
    out = set()
    for root, _, files in os.walk(os.path.join(REPO, "Sources")):
        for f in files:
            if f.endswith(".swift"):
                out.update(re.findall(r'"([A-Z][A-Z0-9_]+)"', open(os.path.join(root, f)).read()))
    # StageConfiguration lists some variables as "A / B" pairs in its --help table.
    for root, _, files in os.walk(os.path.join(REPO, "Sources")):
        for f in files:
            if f.endswith(".swift"):
                for pair in re.findall(r'"([A-Z][A-Z0-9_]+(?: / [A-Z][A-Z0-9_]+)+)"', open(os.path.join(root, f)).read()):
                    out.update(pair.split(" / "))
    return out


def appstorectl_subcommands():
    """Subcommand names of appstorectl: the `subcommands: [...]` types of its root command
    (`AppStoreCtl`, in OperatorCommands), by commandName or type name."""
    src = os.path.join(REPO, "Sources", "6-Tools", "OperatorCommands")
    text = {f: open(os.path.join(src, f)).read() for f in os.listdir(src) if f.endswith(".swift")}
    root = next((b for b in text.values() if re.search(r"struct AppStoreCtl\b", b)), "")
    listed = re.search(r"subcommands:\s*\[([^\]]*)\]", root)
    names = set()
    for t in re.findall(r"(\w+)\.self", listed.group(1) if listed else ""):
        body = next((b for b in text.values() if re.search(rf"struct {t}\b", b)), "")
        m = re.search(rf"struct {t}\b[^{{]*{{.*?commandName:\s*\"([^\"]+)\"", body, re.S)
        names.add(m.group(1) if m else t.lower())
    return names


def dockerfile_targets(path=DOCKERFILE):
    """The names of the Dockerfile's stages."""
    return set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", open(path).read(), re.M | re.I))
