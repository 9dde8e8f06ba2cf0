#!/usr/bin/env python3
"""Checks deploy/monitoring: the alert rules (promtool check rules, the promtool unit tests in
monitoring/tests, every alert with a case that fires it and one that must not, severity, summary,
description and a runbook_url naming a section of deploy/README.md), the PrometheusRule of
deploy/k8s/components/monitoring equal to alerts.yaml, the compose Prometheus configuration, and
the Grafana dashboard (its schema basics, the datasource variable, every panel expression parsed by
promtool, every metric it or the rules use exported by the sources).

Needs promtool (Debian's prometheus package: deploy/local/setup) and PyYAML (the deploy-tools venv)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml
from checklib import REPO, Checks

MON = os.path.join(REPO, "deploy", "monitoring")
ALERTS = os.path.join(MON, "alerts.yaml")
DASHBOARD = os.path.join(MON, "grafana", "appstore-entitlements.json")
README = os.path.join(REPO, "deploy", "README.md")
# Grafana's variables, as check-dashboard substitutes them.
GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}
checks = Checks("deploy monitoring")


def promtool(*args, cwd=MON):
    out = subprocess.run(["promtool", *args], capture_output=True, text=True, cwd=cwd)
    return out.returncode, (out.stdout + out.stderr).strip()


def grafana_expr(expr):
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    return expr


def alerts():
    return [r for g in yaml.safe_load(open(ALERTS))["groups"] for r in g["rules"] if "alert" in r]


def readme_anchors():
    """GitHub's anchors of deploy/README.md's headings."""
    anchors = set()
    for line in open(README):
        m = re.match(r"^#+\s+(.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            anchors.add(slug)
    return anchors


def check_rules():
    code, out = promtool("check", "rules", "alerts.yaml")
    checks.check("promtool check rules alerts.yaml", code == 0, out[-600:])
    print("    " + out.replace("\n", "\n    "))
    tests = sorted(glob.glob(os.path.join(MON, "tests", "*.yaml")))
    code, out = promtool("test", "rules", *[os.path.relpath(t, MON) for t in tests])
    checks.check(f"promtool test rules tests/*.yaml ({len(tests)} files)", bool(tests) and code == 0, out[-1500:])
    print("    " + out.replace("\n", "\n    "))
    fires, quiet = {}, {}
    for t in tests:
        for case in yaml.safe_load(open(t)).get("tests", []):
            for a in case.get("alert_rule_test", []):
                (fires if a.get("exp_alerts") else quiet).setdefault(a["alertname"], []).append(case["name"])
    anchors = readme_anchors()
    names = [r["alert"] for r in alerts()]
    checks.check("every alert name is unique", len(names) == len(set(names)), str(names))
    for r in alerts():
        name = r["alert"]
        checks.check(f"{name}: a promtool test fires it and one proves it quiet",
                     name in fires and name in quiet, f"fires: {fires.get(name)}, quiet: {quiet.get(name)}")
        ann, labels = r.get("annotations", {}), r.get("labels", {})
        checks.check(f"{name}: severity critical or warning, a summary and a description",
                     labels.get("severity") in ("critical", "warning") and ann.get("summary") and len(ann.get("description", "")) > 80)
        url = ann.get("runbook_url", "")
        checks.check(f"{name}: runbook_url {url} names a section of deploy/README.md",
                     url.startswith("deploy/README.md#") and url.split("#", 1)[1] in anchors)


def check_prometheusrule():
    out = subprocess.run([sys.executable, os.path.join(MON, "render-prometheusrule"), "--check"], capture_output=True, text=True)
    checks.check("deploy/k8s/components/monitoring/prometheusrule.yaml is generated from alerts.yaml (equal groups)",
                 out.returncode == 0, (out.stdout + out.stderr).strip())


def check_compose_config():
    code, out = promtool("check", "config", "--syntax-only", "prometheus.compose.yml")
    checks.check("promtool check config prometheus.compose.yml (syntax)", code == 0, out[-600:])


def exported_metrics():
    """Metric names the sources register (swift-metrics labels), plus the histogram series."""
    names, uses_middleware = set(), False
    for root, _, files in os.walk(os.path.join(REPO, "Sources")):
        for f in files:
            if f.endswith(".swift"):
                text = open(os.path.join(root, f)).read()
                names.update(re.findall(r'(?:label|metricName):\s*"([a-z][a-z0-9_]*)"', text))
                uses_middleware = uses_middleware or "MetricsMiddleware(" in text
    if uses_middleware:
        names |= hummingbird_metrics()
    return names


# Hummingbird's MetricsMiddleware (ingest's routes) names its metrics itself: read from the resolved
# checkout (the test command builds first), so that a renaming upgrade fails here.
HUMMINGBIRD_MIDDLEWARE = os.path.join(REPO, ".build/checkouts/hummingbird/Sources/Hummingbird/Middleware/MetricsMiddleware.swift")


def hummingbird_metrics():
    """The middleware's metric names as exported: ProcessBootstrap.metricsFactory turns `.` into `_`."""
    present = os.path.exists(HUMMINGBIRD_MIDDLEWARE)
    checks.check("Hummingbird's MetricsMiddleware source is in the resolved checkout (build first)", present, HUMMINGBIRD_MIDDLEWARE)
    labels = set(re.findall(r'label:\s*"([a-z][a-z0-9_.]*)"', open(HUMMINGBIRD_MIDDLEWARE).read())) if present else set()
    return {label.replace(".", "_") for label in labels}


FUNCS_AND_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset",
                   "bool", "inf", "nan", "time"}


def metric_names(expr):
    e = re.sub(r"\{[^}]*\}", "", expr)                                       # label matchers
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)  # groupings
    e = re.sub(r"\[[^\]]*\]", "", e)                                         # ranges
    e = re.sub(r'"[^"]*"', "", e)
    names = set()
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in FUNCS_AND_WORDS or re.fullmatch(r"\d+\w*", word):
            continue
        names.add(re.sub(r"_(bucket|sum|count)$", "", word))
    return names


def check_dashboard():
    try:
        dash = json.load(open(DASHBOARD))
    except (OSError, ValueError) as e:
        checks.check("dashboard: valid JSON", False, str(e))
        return set()
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    checks.check("dashboard: importable by Grafana 10/11 (uid, title, schemaVersion ≥ 36, panels with gridPos)",
                 bool(dash.get("uid")) and bool(dash.get("title")) and dash.get("schemaVersion", 0) >= 36
                 and all("gridPos" in p for p in dash.get("panels", [])))
    checks.check("dashboard: a `datasource` variable of type prometheus",
                 variables.get("datasource", {}).get("type") == "datasource" and variables["datasource"].get("query") == "prometheus")
    used = set()
    for p in dash.get("panels", []):
        ds_ok = p.get("datasource", {}).get("uid") == "${datasource}" and all(
            t.get("datasource", {}).get("uid") == "${datasource}" for t in p.get("targets", []))
        checks.check(f"panel {p['title']!r}: queries the datasource variable", ds_ok)
        for t in p.get("targets", []):
            expr = grafana_expr(t["expr"])
            used |= metric_names(expr)
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "panel.yaml")
                yaml.safe_dump({"groups": [{"name": "panel", "rules": [{"record": "dashboard:panel", "expr": expr}]}]}, open(path, "w"))
                code, out = promtool("check", "rules", path, cwd=d)
            checks.check(f"panel {p['title']!r} {t['refId']}: the expression parses", code == 0, out[-400:])
    return used


def main():
    if not shutil.which("promtool"):
        checks.check("promtool is installed (Debian's prometheus package; run deploy/local/setup)", False)
        checks.finish()
    code, version = promtool("--version")
    print(version.splitlines()[0] if version else "promtool")
    check_rules()
    check_prometheusrule()
    check_compose_config()
    used = check_dashboard()
    for r in alerts():
        used |= metric_names(r["expr"])
    used.discard("up")  # Prometheus' own
    exported = exported_metrics()
    missing = sorted(used - exported)
    checks.check(f"every metric the dashboard and the rules use is exported by the sources ({len(used)} metrics)",
                 not missing, f"not registered in Sources/: {', '.join(missing)}")
    checks.finish()


if __name__ == "__main__":
    main()
