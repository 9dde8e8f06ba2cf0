"""The front door holds: README.md stays short (a newcomer reads it in five minutes), every
relative link of README.md, docs/*.md and deploy/README.md names a file that exists, and every
command the README shows is an executable script of this checkout. deploy/stack.env, the local
stack's wiring, is plain KEY=value lines each with a comment, every key read by a script or check,
and the docs and the Swift tests' fallbacks say the values it holds."""
import glob
import os
import re

from checklib import REPO, STACK_ENV, Checks

MAX_README_LINES = 150
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def relative_links(path):
    for target in LINK.findall(open(path).read()):
        if not re.match(r"^[a-z]+:", target):
            yield target


def readme_command_lines(path):
    """Each command line of the README's sh code blocks, without its comment."""
    lines, in_sh = [], False
    for line in open(path):
        if line.startswith("```"):
            in_sh = line.strip() == "```sh"
            continue
        if in_sh and line.strip() and not line.lstrip().startswith("#"):
            lines.append(" ".join(line.split("#", 1)[0].split()))
    return lines


def readme_commands(path):
    """The first word of each line of the README's sh code blocks."""
    return [line.split()[0] for line in readme_command_lines(path)]


def main():
    checks = Checks("deploy docs")
    readme = os.path.join(REPO, "README.md")
    length = sum(1 for _ in open(readme))
    checks.check(f"README.md is at most {MAX_README_LINES} lines ({length})", length <= MAX_README_LINES)
    pages = [readme, os.path.join(REPO, "deploy", "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    for page in pages:
        broken = [t for t in relative_links(page) if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), t)))]
        checks.check(f"{os.path.relpath(page, REPO)}: every relative link names a file that exists", not broken, ", ".join(broken))
    linked = {os.path.normpath(os.path.join(REPO, t)) for t in relative_links(readme)}
    for page in sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))):
        checks.check(f"README.md links {os.path.relpath(page, REPO)}", page in linked)
    commands = readme_commands(readme)
    checks.check("README.md shows the two commands and the container run", {"deploy/local/run", "deploy/local/test", "deploy/containers/run"} <= set(commands), str(commands))
    for command in sorted(set(commands)):
        path = os.path.join(REPO, command)
        checks.check(f"README.md command {command} is an executable script of this checkout", os.path.isfile(path) and os.access(path, os.X_OK))
    # The test command runs each README run command exactly as shown (deploy/local/test, and the
    # container tests it calls), so a change that breaks the front door cannot land.
    test_scripts = "".join(open(os.path.join(REPO, p)).read() for p in ("deploy/local/test", "deploy/containers/test"))
    for line in readme_command_lines(readme):
        if line.split()[0] in ("deploy/local/run", "deploy/containers/run"):
            checks.check(f"the test command runs the README's `{line}` exactly as shown", line + " " in test_scripts)
    # Self-test: the link check does catch a broken link.
    checks.check("self-test: a link to a missing file is caught", list(relative_links_of_text("[x](docs/missing.md)")) == ["docs/missing.md"])
    check_stack_env(checks)
    checks.finish()


# Where the docs and the Swift tests write a value of deploy/stack.env: (file, pattern, key), the
# pattern's group the value. A Swift fallback the tests no longer write (read from the file or the
# environment instead) is not an error; a doc that no longer says it is.
STACK_IN_DOCS = [
    ("docs/local-stack.md", r"\*\*Postgres 15\*\*.*?`127\.0\.0\.1:(\d+)`", "POSTGRES_PORT"),
    ("docs/local-stack.md", r"\*\*Tansu\*\* broker.*?`127\.0\.0\.1:(\d+)`", "BROKER_PORT"),
    ("docs/local-stack.md", r"\*\*The local fetch wait is (\d+) ms\*\*", "LOCAL_KAFKA_FETCH_WAIT_MAX_MS"),
    ("docs/stages.md", r"KAFKA_BOOTSTRAP_SERVERS=127\.0\.0\.1:(\d+)", "BROKER_PORT"),
    ("docs/benchmarks.md", r"`BENCH_BROKER_PORT`, (\d+)", "BENCH_BROKER_PORT"),
    ("README.md", r"nginx gateway over TLS \(`https://127\.0\.0\.1:(\d+)`", "CONTAINERS_GATEWAY_PORT"),
    ("deploy/README.md", r"through the gateway over TLS on `127\.0\.0\.1:(\d+)`", "CONTAINERS_GATEWAY_PORT"),
    ("deploy/README.md", r"`deploy/local/up prometheus` runs Debian's `prometheus`.*?`127\.0\.0\.1:(\d+)`", "PROMETHEUS_PORT"),
]
# Swift files by their path under Sources/ or Tests/, wherever the layers put their module.
STACK_IN_SWIFT = [
    ("TestSupport/TestServices.swift", r'"KAFKA_BOOTSTRAP_SERVERS"\]\s*\?\?\s*"127\.0\.0\.1:(\d+)"', "BROKER_PORT"),
    ("enrich-bench/main.swift", r'"KAFKA_BOOTSTRAP_SERVERS"\]\s*\?\?\s*"127\.0\.0\.1:(\d+)"', "BROKER_PORT"),
    ("GrantTestSupport/ScratchDatabase.swift", r'"POSTGRES_HOST"\]\s*\?\?\s*"([^"]+)"', "POSTGRES_HOST"),
    ("GrantTestSupport/ScratchDatabase.swift", r'"POSTGRES_PORT"\]\s*\?\?\s*""\)\s*\?\?\s*(\d+)', "POSTGRES_PORT"),
    ("GrantTestSupport/ScratchDatabase.swift", r'"POSTGRES_USER"\]\s*\?\?\s*"([^"]+)"', "POSTGRES_USER"),
    ("EndToEndTests/PipelineUnderTest.swift", r'"APPSTORE_API_RATE_SCALE":\s*"(\d+)"', "LOCAL_APPSTORE_API_RATE_SCALE"),
    ("EndToEndTests/PipelineUnderTest.swift", r'"KAFKA_SESSION_TIMEOUT_MS":\s*"(\d+)"', "LOCAL_KAFKA_SESSION_TIMEOUT_MS"),
    ("EndToEndTests/PipelineUnderTest.swift", r'"KAFKA_HEARTBEAT_INTERVAL_MS":\s*"(\d+)"', "LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS"),
]


def stack_format_problems(lines):
    """What keeps deploy/stack.env from being read alike by bash, Python, compose and kustomize, or
    from saying what each value is: a line that is not `KEY=plain-value`, a key twice, a key without
    a comment right above it."""
    problems, keys, previous = [], set(), ""
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if line.strip() and not line.startswith("#"):
            m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=([^\s'\"$`\\]*)", line)
            if not m:
                problems.append(f"line {n} is not KEY=value with a plain value (no spaces, quotes, $ or backslashes): {line!r}")
            elif m.group(1) in keys:
                problems.append(f"line {n}: {m.group(1)} again")
            else:
                keys.add(m.group(1))
                if not previous.startswith("#"):
                    problems.append(f"line {n}: {m.group(1)} has no comment above it saying what it is")
        previous = line
    return problems


def stack_values(lines):
    return dict(line.strip().split("=", 1) for line in lines if line.strip() and not line.startswith("#") and "=" in line)


def check_stack_env(checks):
    lines = open(STACK_ENV).readlines()
    problems = stack_format_problems(lines)
    checks.check("deploy/stack.env: KEY=value lines with plain values, each key once with a comment above it", not problems,
                 "; ".join(problems))
    checks.check("self-test: a shell expansion, a quoted value and a key without a comment are caught in deploy/stack.env",
                 len(stack_format_problems(["# a\n", "A=$B\n", "# c\n", 'C="d"\n', "E=1\n"])) == 3)
    stack = stack_values(lines)
    # Every key is read somewhere: a script, a check or a compose file of deploy/.
    texts = []
    for root, _, files in os.walk(os.path.join(REPO, "deploy")):
        for f in files:
            path = os.path.join(root, f)
            if path != STACK_ENV and not f.endswith((".md", ".json", ".lua", ".pyc")):
                try:
                    texts.append(open(path).read())
                except UnicodeDecodeError:
                    pass
    unread = [k for k in stack if not any(re.search(rf"\b{k}\b", t) for t in texts)]
    checks.check("deploy/stack.env: every key is read by a script or check of deploy/", not unread, f"nothing reads {', '.join(unread)}")
    for path, pattern, key in STACK_IN_DOCS:
        found = re.findall(pattern, open(os.path.join(REPO, path)).read(), re.S)
        checks.check(f"{path} says deploy/stack.env's {key} ({stack.get(key)})", bool(found) and set(found) == {stack.get(key)},
                     f"{path} says {key} is {', '.join(found) or 'nowhere'}, deploy/stack.env says {stack.get(key)!r}")
    for name, pattern, key in STACK_IN_SWIFT:
        files = sorted(f for top in ("Sources", "Tests") for f in glob.glob(os.path.join(REPO, top, "**", name), recursive=True))
        path = ", ".join(os.path.relpath(f, REPO) for f in files) or name
        found = [v for f in files for v in re.findall(pattern, open(f).read())]
        checks.check(f"{path}: where it still writes {key} as a fallback, it is deploy/stack.env's ({stack.get(key)})",
                     set(found) <= {stack.get(key)}, f"{path} writes {key} as {', '.join(sorted(set(found)))}, "
                     f"deploy/stack.env says {stack.get(key)!r}")


def relative_links_of_text(text):
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:", t)]


if __name__ == "__main__":
    main()
