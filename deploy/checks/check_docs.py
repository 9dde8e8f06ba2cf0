"""The front door holds: README.md stays short (a newcomer reads it in five minutes), every
relative link of README.md, docs/*.md and deploy/README.md names a file that exists, and every
command the README shows is an executable script of this checkout."""
import glob
import os
import re

from checklib import REPO, Checks

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
    checks.finish()


def relative_links_of_text(text):
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:", t)]


if __name__ == "__main__":
    main()
