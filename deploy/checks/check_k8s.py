#!/usr/bin/env python3
"""Validates deploy/k8s: every manifest file and every kustomize render (base, sandbox, production)
against the Kubernetes JSON schemas (kubernetes-validate, strict), KEDA resources against the
schemas in deploy/checks/schemas, then what the schemas cannot see (probes, grace periods,
autoscalers per stage, partitions, secrets as files, no test root in production).

Usage: check_k8s.py KUBECTL   (KUBECTL renders with `kubectl kustomize`)"""
import copy
import json
import os
import subprocess
import sys

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

from checklib import REPO, Checks, appstorectl_subcommands, dockerfile_targets, executable_products, source_strings

K8S = os.path.join(REPO, "deploy", "k8s")
KUBE_VERSIONS = ["1.31.0", "1.37.0"]  # oldest supported cluster (preStop sleep on by default) and newest
STAGES = {"ingest": 8080, "verify": 8081, "enrich": 8082, "grant": 8083}
CONSUMERS = {"verify": "appstore.verify", "enrich": "appstore.enrich", "grant": "appstore.grant"}
CANCELLATION_MARGIN_S = 5  # ProcessBootstrap.run: maximumCancellationDuration after the graceful deadline
TEST_TRUST_VARIABLES = ("APPSTORE_TRUSTED_ROOTS", "APPSTORE_API_BASE_URL")

checks = Checks("deploy k8s")


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


# ---- schema validation ------------------------------------------------------------------------

def keda_validators():
    defs_dir = f"v{KUBE_VERSIONS[-1]}-local-strict"
    defs = kv_utils.schema_contents(f"kubernetes-json-schema/{defs_dir}/_definitions.json", KUBE_VERSIONS[-1])
    registry = Resource.from_contents(defs) @ Registry()
    validators = {}
    for kind in ("ScaledObject", "TriggerAuthentication"):
        path = os.path.join(REPO, "deploy", "checks", "schemas", f"{kind.lower()}.keda.sh-v1alpha1.schema.json")
        schema = json.load(open(path))
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[("keda.sh/v1alpha1", kind)] = jsonschema.Draft202012Validator(schema, registry=registry)
    return validators


KEDA = None
SOURCE_VARIABLES = source_strings()
MISSING = {"executable products": set(), "variables no source reads yet": set()}


def schema_errors(doc):
    """Errors of one resource against its schema; never skips: an unknown kind is an error."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in KEDA:
        return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in KEDA[key].iter_errors(doc)]
    errors = []
    for version in KUBE_VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            errors.append(f"k8s {version}: {'.'.join(map(str, e.path))}: {e.message}")
        except kv_utils.SchemaNotFoundError as e:
            errors.append(f"no schema: {e.message}")
    return errors


def validate_all(label, docs):
    for doc in docs:
        name = f"{label}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')} is valid"
        errs = schema_errors(doc)
        checks.check(name, not errs, "; ".join(errs)[:600])


# ---- the files: every manifest is listed by a kustomization, and valid on its own -------------

def kustomizations():
    for root, _, files in os.walk(K8S):
        if "kustomization.yaml" in files:
            yield root, yaml.safe_load(open(os.path.join(root, "kustomization.yaml")))


def referenced_files():
    """(manifest files, every file a kustomization names)."""
    manifests, named = set(), set()
    for root, k in kustomizations():
        named.add(os.path.join(root, "kustomization.yaml"))
        for r in k.get("resources", []):
            p = os.path.normpath(os.path.join(root, r))
            if os.path.isfile(p):
                manifests.add(p)
                named.add(p)
        for p in k.get("patches", []):
            if "path" in p:
                named.add(os.path.normpath(os.path.join(root, p["path"])))
        for g in k.get("configMapGenerator", []):
            for e in g.get("envs", []) + g.get("files", []):
                named.add(os.path.normpath(os.path.join(root, e.split("=")[-1])))
    return manifests, named


def check_files():
    manifests, named = referenced_files()
    on_disk = {os.path.join(r, f) for r, _, fs in os.walk(K8S) for f in fs}
    orphans = sorted(os.path.relpath(p, REPO) for p in on_disk - named)
    checks.check("every file under deploy/k8s is used by a kustomization", not orphans, f"unused: {orphans}")
    for path in sorted(manifests):
        validate_all(os.path.relpath(path, REPO), load_docs(path))


def render(kubectl, path):
    out = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True)
    label = f"kustomize render of {os.path.relpath(path, REPO)}"
    if not checks.check(label, out.returncode == 0, out.stderr.strip()[:600]):
        return []
    return [d for d in yaml.safe_load_all(out.stdout) if d]


# ---- what the schemas cannot see ----------------------------------------------------------------

def find(docs, kind, name=None):
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def container_env(docs, container):
    """The container's environment as the kubelet would build it (envFrom ConfigMaps, then env)."""
    env = {}
    for src in container.get("envFrom", []):
        ref = src.get("configMapRef", {}).get("name")
        for cm in find(docs, "ConfigMap", ref):
            env.update(cm.get("data", {}))
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        elif "configMapKeyRef" in e.get("valueFrom", {}):
            ref = e["valueFrom"]["configMapKeyRef"]
            cms = find(docs, "ConfigMap", ref["name"])
            env[e["name"]] = cms[0].get("data", {}).get(ref["key"]) if cms else None
        else:
            env[e["name"]] = "(from the pod)"
    return env


def topic_catalogue():
    return json.load(open(os.path.join(REPO, "schemas", "topics.json")))["topics"]


def check_stage(label, docs, stage, port):
    deps = find(docs, "Deployment", stage)
    if not checks.check(f"{label}: Deployment {stage} exists", len(deps) == 1):
        return
    pod = deps[0]["spec"]["template"]
    spec, c = pod["spec"], pod["spec"]["containers"][0]
    env = container_env(docs, c)
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    checks.check(f"{label}: {stage} serves HTTP_PORT {port} as port 'http'",
                 env.get("HTTP_PORT") == str(port) and ports.get("http") == port, f"env {env.get('HTTP_PORT')}, ports {ports}")
    probes = {k: c.get(k, {}).get("httpGet", {}) for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    checks.check(f"{label}: {stage} probes /health (startup, liveness) and /ready (readiness)",
                 probes["startupProbe"].get("path") == "/health" and probes["livenessProbe"].get("path") == "/health"
                 and probes["readinessProbe"].get("path") == "/ready"
                 and all(p.get("port") in ("http", port) for p in probes.values()), str(probes))
    res = c.get("resources", {})
    checks.check(f"{label}: {stage} has cpu and memory requests and limits",
                 all(k in res.get(s, {}) for s in ("requests", "limits") for k in ("cpu", "memory")), str(res))
    shutdown_s = int(env.get("SHUTDOWN_TIMEOUT_MS") or 25000) / 1000
    pre_stop = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    needed = shutdown_s + CANCELLATION_MARGIN_S + pre_stop
    grace = spec.get("terminationGracePeriodSeconds", 30)
    checks.check(f"{label}: {stage} terminationGracePeriodSeconds {grace} > shutdown {shutdown_s:g} s + 5 s + preStop {pre_stop} s",
                 grace > needed)
    drain_s = int(env.get("DRAIN_TIMEOUT_MS") or 10000) / 1000
    checks.check(f"{label}: {stage} DRAIN_TIMEOUT_MS fits inside SHUTDOWN_TIMEOUT_MS", drain_s <= shutdown_s)
    ann = pod["metadata"].get("annotations", {})
    checks.check(f"{label}: {stage} has Prometheus scrape annotations for /metrics on its port",
                 ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(port)
                 and ann.get("prometheus.io/path") == "/metrics", str(ann))
    checks.check(f"{label}: {stage} runs as non-root", spec.get("securityContext", {}).get("runAsNonRoot") is True)
    labels = pod["metadata"]["labels"]
    pdbs = [p for p in find(docs, "PodDisruptionBudget")
            if all(labels.get(k) == v for k, v in p["spec"]["selector"]["matchLabels"].items())]
    checks.check(f"{label}: {stage} has one PodDisruptionBudget", len(pdbs) == 1, f"found {len(pdbs)}")
    check_autoscaler(label, docs, stage, env)
    image = c["image"]
    target = image.split("/")[-1].split(":")[0]
    if not checks.check(f"{label}: {stage} image is Dockerfile target {target}, an executable product",
                        target in dockerfile_targets() and target in executable_products(), f"missing executable product: {target}"):
        MISSING["executable products"].add(target)
    unknown = sorted(k for k in env if k not in SOURCE_VARIABLES and not k.startswith("KAFKA_PROP_"))
    MISSING["variables no source reads yet"].update(unknown)
    checks.check(f"{label}: {stage} gets only variables the sources read", not unknown, f"no source reads: {', '.join(unknown)}")
    if label != "base":  # the base leaves tags to the overlays
        checks.check(f"{label}: {stage} image is tagged, not latest", ":" in image.split("/")[-1] and not image.endswith(":latest"), image)


def check_autoscaler(label, docs, stage, env):
    hpas = [h for h in find(docs, "HorizontalPodAutoscaler") if h["spec"]["scaleTargetRef"]["name"] == stage]
    scaled = [s for s in find(docs, "ScaledObject") if s["spec"]["scaleTargetRef"]["name"] == stage]
    if not checks.check(f"{label}: {stage} has exactly one autoscaler (HPA or KEDA ScaledObject)",
                        len(hpas) + len(scaled) == 1, f"{len(hpas)} HPA, {len(scaled)} ScaledObject"):
        return
    group = CONSUMERS.get(stage)
    inputs = [t for t in topic_catalogue() if t.get("consumerGroup") == group] if group else []
    if hpas:
        h = hpas[0]["spec"]
        checks.check(f"{label}: {stage} HPA scales on CPU",
                     any(m.get("resource", {}).get("name") == "cpu" for m in h.get("metrics", [])))
        top = h["maxReplicas"]
    else:
        s = scaled[0]["spec"]
        top = s.get("maxReplicaCount", 100)
        kafka = [t for t in s["triggers"] if t["type"] == "kafka"]
        ok = len(kafka) == 1 and len(inputs) == 1
        if ok:
            md = kafka[0]["metadata"]
            ok = md.get("consumerGroup") == group and md.get("topic") == inputs[0]["name"] and env.get(
                md.get("bootstrapServersFromEnv", "")) not in (None, "")
        checks.check(f"{label}: {stage} scales on the lag of group {group} on its input topic, broker from its env",
                     ok, json.dumps([t.get("metadata") for t in kafka]))
        for t in s["triggers"]:
            ref = t.get("authenticationRef", {}).get("name")
            if ref:
                checks.check(f"{label}: {stage} trigger authentication {ref} exists",
                             len(find(docs, "TriggerAuthentication", ref)) == 1)
        checks.check(f"{label}: {stage} ScaledObject has no fallback with cpu/memory triggers (KEDA refuses it)",
                     not (s.get("fallback") and any(t["type"] in ("cpu", "memory") for t in s["triggers"])))
        checks.check(f"{label}: {stage} minReplicaCount <= maxReplicaCount", s.get("minReplicaCount", 0) <= top)
    if inputs:
        checks.check(f"{label}: {stage} max replicas {top} <= {inputs[0]['partitions']} partitions of {inputs[0]['name']}",
                     top <= inputs[0]["partitions"])


def check_ingress(label, docs):
    svc = find(docs, "Service", "ingest")
    ok = len(svc) == 1 and svc[0]["spec"]["selector"].get("app.kubernetes.io/name") == "ingest"
    checks.check(f"{label}: Service ingest selects the ingest pods", ok)
    ings = find(docs, "Ingress", "ingest")
    if not checks.check(f"{label}: Ingress ingest exists", len(ings) == 1):
        return
    spec = ings[0]["spec"]
    paths = sorted((p["path"], p["pathType"], p["backend"]["service"]["name"])
                   for r in spec["rules"] for p in r["http"]["paths"])
    checks.check(f"{label}: Ingress routes exactly /v2/notifications and /v1/transactions to ingest",
                 paths == [("/v1/transactions", "Exact", "ingest"), ("/v2/notifications", "Exact", "ingest")], str(paths))
    checks.check(f"{label}: Ingress terminates TLS from a Secret", bool(spec.get("tls")) and all(t.get("secretName") for t in spec["tls"]))
    ann = ings[0]["metadata"].get("annotations", {})
    checks.check(f"{label}: Ingress limits bodies to 1 MiB", ann.get("nginx.ingress.kubernetes.io/proxy-body-size") == "1m")


def check_secrets(label, docs):
    enrich = find(docs, "Deployment", "enrich")
    if enrich and label != "base":  # the base leaves the apps and keys to the overlays
        c = enrich[0]["spec"]["template"]["spec"]["containers"][0]
        vols = {v["name"]: v for v in enrich[0]["spec"]["template"]["spec"]["volumes"]}
        mounts = [m["mountPath"] for m in c.get("volumeMounts", []) if "secret" in vols.get(m["name"], {})]
        creds = container_env(docs, c).get("APPSTORE_API_CREDENTIALS") or ""
        key_paths = [e.split(":")[3] for e in creds.split(",") if e.count(":") == 3]
        checks.check(f"{label}: every .p8 of APPSTORE_API_CREDENTIALS is a file in a mounted Secret",
                     bool(key_paths) and all(any(p.startswith(m + "/") for m in mounts) for p in key_paths),
                     f"keys {key_paths}, secret mounts {mounts}")
    text = yaml.safe_dump_all(docs)
    checks.check(f"{label}: no key material or Secret objects in the manifests",
                 "PRIVATE KEY" not in text and not find(docs, "Secret"))


def trust_violations(docs):
    """Where a rendered environment would trust a test root or talk to the simulator."""
    found = []
    for d in docs:
        for key in (d.get("data") or {}) if d["kind"] == "ConfigMap" else {}:
            if key in TEST_TRUST_VARIABLES:
                found.append(f"ConfigMap {d['metadata']['name']} sets {key}")
        spec = d.get("spec", {}).get("template", {}).get("spec", {}) if d["kind"] in ("Deployment", "Job") else {}
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            found += [f"{d['metadata']['name']} sets {e['name']}" for e in c.get("env", []) if e["name"] in TEST_TRUST_VARIABLES]
            if "appstore-sim" in c.get("image", ""):
                found.append(f"{d['metadata']['name']} runs the simulator")
    return found


def check_job(label, docs):
    jobs = find(docs, "Job", "appstore-migrate")
    ok = len(jobs) == 1
    if ok:
        c = jobs[0]["spec"]["template"]["spec"]["containers"][0]
        ok = "appstorectl" in c["image"] and (c.get("command", []) + c.get("args", [])) == ["migrate"]
    checks.check(f"{label}: Job appstore-migrate runs `appstorectl migrate`", ok)
    checks.check(f"{label}: `appstorectl migrate` is a subcommand", "migrate" in appstorectl_subcommands(),
                 f"appstorectl has {sorted(appstorectl_subcommands())}")


def self_tests(docs):
    """The checks above must be able to fail: known-bad inputs are refused."""
    bad = copy.deepcopy(find(docs, "Deployment", "ingest")[0])
    bad["spec"]["replica"] = 2
    checks.check("self-test: the Kubernetes validator refuses an unknown Deployment field", bool(schema_errors(bad)))
    so = copy.deepcopy(find(docs, "ScaledObject")[0])
    del so["spec"]["triggers"][0]["metadata"]["consumerGroup"]
    checks.check("self-test: the KEDA schema refuses a Kafka trigger without consumerGroup", bool(schema_errors(so)))
    so = copy.deepcopy(find(docs, "ScaledObject")[0])
    so["spec"]["triggers"][0]["metadata"]["lagThreshold"] = 100
    checks.check("self-test: the KEDA schema refuses a numeric lagThreshold (must be a string)", bool(schema_errors(so)))
    checks.check("self-test: an unknown custom resource kind is an error, not skipped",
                 bool(schema_errors({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})))
    dep = copy.deepcopy(find(docs, "Deployment", "verify")[0])
    dep["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "APPSTORE_TRUSTED_ROOTS", "value": "/x.pem"})
    checks.check("self-test: the production trust guard sees APPSTORE_TRUSTED_ROOTS", bool(trust_violations([dep])))


def main():
    global KEDA
    kubectl = sys.argv[1]
    KEDA = keda_validators()
    print(f"kubernetes-validate {kubernetes_validate.__version__ if hasattr(kubernetes_validate, '__version__') else ''}"
          f" against Kubernetes {', '.join(KUBE_VERSIONS)} (strict)")
    check_files()
    renders = {}
    for target in ("base", "overlays/sandbox", "overlays/production"):
        docs = render(kubectl, os.path.join(K8S, target))
        renders[target] = docs
        if not docs:
            continue
        label = target.split("/")[-1]
        validate_all(f"{label} render", docs)
        for stage, port in STAGES.items():
            check_stage(label, docs, stage, port)
        check_ingress(label, docs)
        check_secrets(label, docs)
        check_job(label, docs)
    prod = renders.get("overlays/production") or []
    if prod:
        v = trust_violations(prod)
        checks.check("production: no test root, no API base URL override, no simulator", not v, "; ".join(v))
        apps = [cm for cm in find(prod, "ConfigMap") if "APPSTORE_APPS" in cm.get("data", {})]
        checks.check("production: APPSTORE_APPS serves the Production environment",
                     bool(apps) and all("Production" in cm["data"]["APPSTORE_APPS"] for cm in apps))
        checks.check("production: consuming stages scale on consumer lag (KEDA)",
                     all(find(prod, "ScaledObject", s) for s in CONSUMERS))
        self_tests(prod)
    if "migrate" not in appstorectl_subcommands():
        MISSING["executable products"].add("appstorectl migrate (subcommand)")
    for what, names in MISSING.items():
        if names:
            print(f"missing {what}: {', '.join(sorted(names))}" if what.startswith("exec") else f"{what}: {', '.join(sorted(names))}")
    count = sum(len(d) for d in renders.values())
    print(f"rendered {count} resources in {len(renders)} renders")
    checks.finish()


if __name__ == "__main__":
    main()
