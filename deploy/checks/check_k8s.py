#!/usr/bin/env python3
"""Validates deploy/k8s: every manifest file and every kustomize render (base, sandbox, production)
against the Kubernetes JSON schemas (kubernetes-validate, strict), KEDA resources against the
schemas in deploy/checks/schemas, then what the schemas cannot see (probes, grace periods,
autoscalers per stage and no replicas beside them, partitions, immutable image references, HTTPS
only at the Ingress, grant's migrations before it starts, the generated product mapping, the
operations workloads and their settings, secrets as files, no test root in production, Apple's
addresses only on /v2/notifications at the Ingress).

Usage: check_k8s.py KUBECTL   (KUBECTL renders with `kubectl kustomize`)"""
import copy
import ipaddress
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import kubernetes_validate
import yaml
from checklib import (
    REPO,
    Checks,
    appstorectl_subcommands,
    dockerfile_targets,
    executable_products,
    read_env_file,
    source_strings,
    stack_env,
)
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

K8S = os.path.join(REPO, "deploy", "k8s")
KUBE_VERSIONS = ["1.31.0", "1.37.0"]  # oldest supported cluster (preStop sleep on by default) and newest
STAGES = {"ingest": 8080, "verify": 8081, "enrich": 8082, "grant": 8083}
CONSUMERS = {"verify": "appstore.verify", "enrich": "appstore.enrich", "grant": "appstore.grant"}
CANCELLATION_MARGIN_S = 5  # ProcessBootstrap.run: maximumCancellationDuration after the graceful deadline
TEST_TRUST_VARIABLES = ("APPSTORE_TRUSTED_ROOTS", "APPSTORE_API_BASE_URL")
# Tracing (docs/configuration.md, "Tracing"): what every stage carries. The endpoint and sampler come
# from the pipeline ConfigMap (blank endpoint: off); the resource attributes name the pod and its
# namespace through the downward API. OTLP/HTTP's port, which production's NetworkPolicies let out.
TRACING_CONFIG_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER")
TRACING_RESOURCE = {"k8s.pod.name": "metadata.name", "k8s.namespace.name": "metadata.namespace"}
OTLP_HTTP_PORT = 4318
# Readiness: ingest serves the webhook and answers 503 while the broker is down, so /ready takes it
# out of the Service. The consumers serve no traffic: /ready (stuck in retry) as readiness would make
# every pod NotReady during an Apple or Postgres outage and the PDBs would block node drains.
READINESS_PATH = {"ingest": "/ready", "verify": "/health", "enrich": "/health", "grant": "/health"}
# An image reference that cannot move: a digest, a version (1.4.2, v1.4.2-rc.1) or a commit hash.
IMMUTABLE_TAG = re.compile(r"^(v?\d+\.\d+\.\d+([-+.][0-9A-Za-z.+-]+)?|[0-9a-f]{7,40})$")
PRODUCTION_MIN_INGEST = 3
# Apple delivers notifications from 17.0.0.0/8 only; ingress-nginx reads the allow-list from either
# annotation (allowlist-source-range first, whitelist-source-range its older alias).
APPLE_NETWORK = ipaddress.ip_network("17.0.0.0/8")
ALLOWLIST_ANNOTATIONS = ("nginx.ingress.kubernetes.io/allowlist-source-range", "nginx.ingress.kubernetes.io/whitelist-source-range")
INGEST_ROUTES = [("/v1/customer", "Exact", "ingest"), ("/v1/offers/signature", "Exact", "ingest"), ("/v1/receipts", "Exact", "ingest"),
                 ("/v1/transactions", "Exact", "ingest"),
                 ("/v2/notifications", "Exact", "ingest")]
OPS = {  # the operations workloads: kind, name -> the appstorectl arguments they start with
    ("Deployment", "appstorectl"): None,  # a toolbox: `sleep`, commands through kubectl exec
    ("CronJob", "appstore-reconcile"): ["reconcile"],
    ("CronJob", "appstore-refunds"): ["refunds"],
    ("Job", "appstore-topics"): ["topics", "apply"],
}

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
    # KEDA (components/keda) and the Prometheus Operator (components/monitoring).
    for api, kind, file in (("keda.sh/v1alpha1", "ScaledObject", "scaledobject.keda.sh-v1alpha1"),
                            ("keda.sh/v1alpha1", "TriggerAuthentication", "triggerauthentication.keda.sh-v1alpha1"),
                            ("monitoring.coreos.com/v1", "PrometheusRule", "prometheusrule.monitoring.coreos.com-v1"),
                            ("monitoring.coreos.com/v1", "PodMonitor", "podmonitor.monitoring.coreos.com-v1")):
        path = os.path.join(REPO, "deploy", "checks", "schemas", f"{file}.schema.json")
        schema = json.load(open(path))
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[(api, kind)] = jsonschema.Draft202012Validator(schema, registry=registry)
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

def check_monitoring_component(kubectl):
    """components/monitoring added to the production overlay: it renders, the PodMonitor's selector
    matches exactly the four stages' pods, each has the port it scrapes, and job comes from a label
    every stage pod carries with the stage's name (the alert rules match up{job=~"ingest|…"})."""
    # kustomize refuses absolute paths: a throwaway overlay beside the others, removed at once.
    with tempfile.TemporaryDirectory(dir=os.path.join(K8S, "overlays"), prefix=".check-monitoring-") as d:
        with open(os.path.join(d, "kustomization.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                            "namespace": "appstore-production", "resources": ["../production"], "components": ["../../components/monitoring"]}, f)
        out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
    if not checks.check("monitoring component: renders with the production overlay", out.returncode == 0, out.stderr.strip()[:600]):
        return
    docs = [x for x in yaml.safe_load_all(out.stdout) if x]
    validate_all("monitoring render", [x for x in docs if x["apiVersion"].startswith("monitoring.coreos.com/")])
    monitors, rules = find(docs, "PodMonitor"), find(docs, "PrometheusRule")
    if not checks.check("monitoring component: one PodMonitor and one PrometheusRule, in the overlay's namespace",
                        len(monitors) == 1 and len(rules) == 1 and all(
                            x["metadata"].get("namespace") == "appstore-production" for x in monitors + rules)):
        return
    spec = monitors[0]["spec"]
    expr = (spec["selector"].get("matchExpressions") or [{}])[0]
    selected = {d["metadata"]["name"] for d in find(docs, "Deployment")
                if (d["spec"]["template"]["metadata"].get("labels") or {}).get(expr.get("key")) in expr.get("values", [])}
    checks.check("monitoring component: the PodMonitor selects exactly the four stages' pods", selected == set(STAGES), str(sorted(selected)))
    port = spec["podMetricsEndpoints"][0].get("port")
    for stage in STAGES:
        dep = find(docs, "Deployment", stage)
        if not dep:
            continue
        tmpl = dep[0]["spec"]["template"]
        ports = {p.get("name") for c in tmpl["spec"]["containers"] for p in c.get("ports", [])}
        checks.check(f"monitoring component: {stage} has the port `{port}` the PodMonitor scrapes and "
                     f"{spec.get('jobLabel')}={stage} for job", port in ports and tmpl["metadata"]["labels"].get(spec.get("jobLabel")) == stage)


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
    problems = probe_problems(deps[0], stage, port)
    ready = READINESS_PATH[stage]
    checks.check(f"{label}: {stage} probes /health (startup, liveness) and {ready} (readiness)", not problems, "; ".join(problems))
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
    expanded = expansion_only_variables(c)
    unknown = sorted(k for k in env if k not in SOURCE_VARIABLES and not k.startswith("KAFKA_PROP_") and k not in expanded)
    MISSING["variables no source reads yet"].update(unknown)
    checks.check(f"{label}: {stage} gets only variables the sources read (and pod fields only expanded into them)", not unknown,
                 f"no source reads: {', '.join(unknown)}")
    problems = tracing_env_problems(docs, deps[0])
    checks.check(f"{label}: {stage} carries the tracing variables: {' and '.join(TRACING_CONFIG_VARIABLES)} (appstore-pipeline; blank "
                 "endpoint: off), OTEL_RESOURCE_ATTRIBUTES with k8s.pod.name and k8s.namespace.name from the downward API",
                 not problems, "; ".join(problems))
    if stage == "grant":
        check_grant_migrations(label, docs, deps[0], env)
        if label != "base":  # the overlays generate the mapping
            check_products(label, docs, deps[0], env)



def expansion_only_variables(container):
    """Variables set from the pod (downward API fieldRef) only to be expanded into another one's
    value as $(NAME): the kubelet substitutes them, so no source needs to read them."""
    env = container.get("env", [])
    used = {n for e in env if "value" in e for n in re.findall(r"\$\((\w+)\)", str(e["value"]))}
    return {e["name"] for e in env if "fieldRef" in e.get("valueFrom", {}) and e["name"] in used}


def tracing_env_problems(docs, dep):
    """What a stage lacks of tracing's settings: the endpoint (blank, or an http(s) URL) and sampler
    from its ConfigMaps, and OTEL_RESOURCE_ATTRIBUTES naming its pod and namespace with $(VAR)s that
    the downward API sets earlier in its env list (the kubelet expands only those; a later or unknown
    one stays the literal text $(VAR))."""
    c = dep["spec"]["template"]["spec"]["containers"][0]
    env = container_env(docs, c)
    problems = [f"no {v} (from the appstore-pipeline ConfigMap)" for v in TRACING_CONFIG_VARIABLES if v not in env]
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if endpoint and not re.match(r"^https?://[^/\s]+", endpoint):
        problems.append(f"OTEL_EXPORTER_OTLP_ENDPOINT {endpoint!r} is neither blank (off) nor an http(s) base URL")
    entries = c.get("env", [])
    names = [e["name"] for e in entries]
    if "OTEL_RESOURCE_ATTRIBUTES" not in names:
        return problems + ["no OTEL_RESOURCE_ATTRIBUTES in its env"]
    at = names.index("OTEL_RESOURCE_ATTRIBUTES")
    value = str(entries[at].get("value", ""))
    attributes = dict(a.split("=", 1) for a in value.split(",") if "=" in a)
    for key, field in TRACING_RESOURCE.items():
        m = re.fullmatch(r"\$\((\w+)\)", attributes.get(key, ""))
        source = next((e for e in entries[:at] if m and e["name"] == m.group(1)), None)
        if not m:
            problems.append(f"OTEL_RESOURCE_ATTRIBUTES {value!r} does not set {key} from a variable ($(NAME))")
        elif not source:
            problems.append(f"{key}'s $({m.group(1)}) is not set before OTEL_RESOURCE_ATTRIBUTES in the env list: the kubelet would leave it as text")
        elif source.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != field:
            problems.append(f"{key}'s {m.group(1)} is not the pod's {field} (downward API)")
    return problems


# ---- workloads, images, autoscalers -------------------------------------------------------------

def pod_template(doc):
    """The pod template of a workload (Deployment, Job, CronJob, Pod), or None."""
    kind = doc.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return doc["spec"]["template"]
    if kind == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]
    if kind == "Pod":
        return doc
    return None


def workloads(docs):
    for d in docs:
        t = pod_template(d)
        if t is not None:
            yield d, t


def all_containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def image_problems(doc, base):
    """Mutable image references. In the base an image names no tag (the overlay pins it); in an
    overlay every image is a digest or an immutable version tag. IfNotPresent (the default for any
    tag but latest) never pulls a tag again, so a moving tag never rolls out."""
    problems = []
    name = f"{doc['kind']}/{doc['metadata']['name']}"
    for c in all_containers(pod_template(doc)["spec"]):
        image, policy = c.get("image", ""), c.get("imagePullPolicy")
        ref = image.split("/")[-1]
        if policy != "IfNotPresent":
            problems.append(f"{name} {c['name']}: imagePullPolicy {policy} (want IfNotPresent with a pinned image)")
        if base:
            if ":" in ref or "@" in image:
                problems.append(f"{name} {c['name']}: the base pins {image}; the overlays set the release")
            continue
        if "@sha256:" in image:
            continue
        tag = ref.split(":", 1)[1] if ":" in ref else ""
        if not IMMUTABLE_TAG.match(tag):
            problems.append(f"{name} {c['name']}: {image} is not a digest or a version tag ({tag or 'no tag'} moves)")
    return problems


def autoscaled(docs):
    """Names of the Deployments an HPA or a KEDA ScaledObject scales."""
    names = set()
    for d in docs:
        if d["kind"] in ("HorizontalPodAutoscaler", "ScaledObject"):
            ref = d["spec"]["scaleTargetRef"]
            if ref.get("kind", "Deployment") == "Deployment":
                names.add(ref["name"])
    return names


def replicas_problems(docs):
    """Deployments with spec.replicas beside an autoscaler: every apply resets the count (and
    rebalances the consumer group)."""
    scaled = autoscaled(docs)
    return [f"Deployment/{d['metadata']['name']} sets replicas {d['spec']['replicas']} beside its autoscaler"
            for d in find(docs, "Deployment") if d["metadata"]["name"] in scaled and "replicas" in d["spec"]]


def kustomization_replicas_problems():
    """`replicas:` in any kustomization or component naming a Deployment that is autoscaled: the
    replicas transformer writes spec.replicas."""
    scaled = set(STAGES)
    return [f"{os.path.relpath(root, REPO)}/kustomization.yaml: replicas for {r['name']}"
            for root, k in kustomizations() for r in k.get("replicas", []) if r.get("name") in scaled]


def probe_problems(dep, stage, port):
    c = dep["spec"]["template"]["spec"]["containers"][0]
    probes = {k: c.get(k, {}).get("httpGet", {}) for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    problems = [f"{k} {p.get('path')} (want /health)" for k, p in probes.items() if k != "readinessProbe" and p.get("path") != "/health"]
    if probes["readinessProbe"].get("path") != READINESS_PATH[stage]:
        problems.append(f"readinessProbe {probes['readinessProbe'].get('path')} (want {READINESS_PATH[stage]})")
    problems += [f"{k} on port {p.get('port')}" for k, p in probes.items() if p.get("port") not in ("http", port)]
    return problems


def ingress_tls_problems(ing):
    ann = ing["metadata"].get("annotations", {})
    problems = []
    if ann.get("nginx.ingress.kubernetes.io/ssl-redirect", "true") != "true":
        problems.append(f"ssl-redirect {ann['nginx.ingress.kubernetes.io/ssl-redirect']!r} lets plain HTTP reach ingest")
    if ann.get("nginx.ingress.kubernetes.io/force-ssl-redirect") != "true":
        problems.append("force-ssl-redirect is not \"true\"")
    problems += [f"{k}: {v!r} (HSTS must stay on)" for k, v in ann.items() if "hsts" in k.lower() and str(v).lower() == "false"]
    return problems


def mounted_file(spec, container, path):
    """The volume (dict) that holds `path` in the container, or None."""
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for m in container.get("volumeMounts", []):
        if path.startswith(m["mountPath"].rstrip("/") + "/"):
            return vols.get(m["name"])
    return None


def option_flags(command_file):
    """--flags of the @Option/@Flag properties in one appstorectl source file."""
    text = open(os.path.join(REPO, "Sources", "6-Tools", "OperatorCommands", command_file)).read()
    names = re.findall(r"@(?:Option|Flag)\b[^\n]*\n\s*var (\w+)", text)
    return {"--" + re.sub(r"([A-Z])", lambda m: "-" + m.group(1).lower(), n) for n in names}


def grant_migration_problems(dep, env, docs=()):
    """`env` is grant's; the init container's own (from `docs`, its ConfigMaps) names its password
    file: the owner's, while grant may log in as a login of its own."""
    spec = dep["spec"]["template"]["spec"]
    problems = []
    if env.get("POSTGRES_MIGRATE") != "false":
        problems.append(f"grant's POSTGRES_MIGRATE is {env.get('POSTGRES_MIGRATE')!r}: the init container migrates, grant must not")
    inits = [c for c in spec.get("initContainers", []) if (c.get("command", []) + c.get("args", []))[:1] == ["migrate"]]
    if len(inits) != 1:
        return problems + ["grant has no init container running `appstorectl migrate`"]
    c = inits[0]
    if "appstorectl" not in c.get("image", "").split("/")[-1]:
        problems.append(f"the migrate init container runs {c.get('image')}, not the appstorectl image")
    if "configMapRef" not in json.dumps(c.get("envFrom", [])) or "appstore-database" not in json.dumps(c.get("envFrom", [])):
        problems.append("the migrate init container lacks the database ConfigMap")
    pw = (container_env(docs, c) if docs else env).get("POSTGRES_PASSWORD_FILE") or ""
    vol = mounted_file(spec, c, pw)
    if not (vol and "secret" in vol):
        problems.append(f"the migrate init container has no Secret mounted at POSTGRES_PASSWORD_FILE ({pw})")
    return problems


def products_problems(docs, dep, env):
    """The product mapping grant reads: a generated ConfigMap (hash suffix, so a change rolls grant)
    holding a products.json in ProductCatalog's format at ENTITLEMENTS_PRODUCTS_FILE."""
    spec = dep["spec"]["template"]["spec"]
    path = env.get("ENTITLEMENTS_PRODUCTS_FILE") or ""
    vol = mounted_file(spec, spec["containers"][0], path)
    if not (vol and "configMap" in vol):
        return [f"ENTITLEMENTS_PRODUCTS_FILE {path!r} is not in a mounted ConfigMap"]
    name = vol["configMap"]["name"]
    cms = find(docs, "ConfigMap", name)
    if not cms:
        return [f"ConfigMap {name} is not in the render (create it with the overlay's configMapGenerator)"]
    problems = []
    if not re.match(r"^appstore-products-[a-z0-9]{10}$", name):
        problems.append(f"ConfigMap {name} has no content hash: a changed mapping would not roll grant")
    mount = next(m["mountPath"] for m in spec["containers"][0]["volumeMounts"] if m["name"] == vol["name"])
    rel = path[len(mount.rstrip("/")) + 1:]
    items = {i["path"]: i["key"] for i in vol["configMap"].get("items", [])} or {k: k for k in cms[0].get("data", {})}
    text = cms[0].get("data", {}).get(items.get(rel, ""), None)
    if text is None:
        return problems + [f"ConfigMap {name} has no key for {rel}"]
    return problems + [f"products.json: {p}" for p in catalog_problems(text)]


def catalog_problems(text):
    """ProductCatalog.parse's rules (Sources/3-Runtime/GrantDecision/ProductCatalog.swift)."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        return [f"not JSON: {e}"]
    if not isinstance(obj, dict):
        return ["not a JSON object"]
    entries = obj.get("products", obj) if isinstance(obj.get("products"), dict) else obj
    problems = []
    for pid, v in entries.items():
        keys = v if isinstance(v, list) else v.get("entitlements") if isinstance(v, dict) else None
        if not pid or not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
            problems.append(f"product {pid!r} must grant a non-empty list of entitlement keys")
        days = v.get("durationDays") if isinstance(v, dict) else None
        if days is not None and not (isinstance(days, int) and not isinstance(days, bool) and days > 0):
            problems.append(f"product {pid!r} has a durationDays that is not a positive whole number")
    if not entries:
        problems.append("maps no product")
    return problems


def settings_problems(docs, doc, needs):
    """What an appstorectl workload lacks of the settings its commands read (`needs` ⊆ broker,
    database, api), and whether every file setting is a mounted Secret."""
    spec = pod_template(doc)["spec"]
    c = spec["containers"][0]
    env = container_env(docs, c)
    want = {"broker": ["KAFKA_BOOTSTRAP_SERVERS"], "database": ["POSTGRES_HOST", "POSTGRES_USER", "POSTGRES_PASSWORD_FILE"],
            "api": ["APPSTORE_APPS", "APPSTORE_API_CREDENTIALS"]}
    problems = [f"no {v}" for n in needs for v in want[n] if not env.get(v)]
    files = [env[v] for v in ("POSTGRES_PASSWORD_FILE", "KAFKA_PROPERTIES_FILE") if env.get(v)]
    creds = env.get("APPSTORE_API_CREDENTIALS") or ""
    files += [e.split(":")[3] for e in creds.split(",") if e.count(":") == 3]
    for f in files:
        vol = mounted_file(spec, c, f)
        if not (vol and "secret" in vol):
            problems.append(f"{f} is not in a mounted Secret")
    return problems

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


def ingest_ingresses(docs):
    """The Ingress objects with a path to the ingest Service."""
    return [d for d in find(docs, "Ingress") if any(p["backend"]["service"]["name"] == "ingest"
                                                   for r in d["spec"].get("rules", []) for p in r.get("http", {}).get("paths", []))]


def ingress_paths(ing):
    return sorted((p["path"], p["pathType"], p["backend"]["service"]["name"]) for r in ing["spec"].get("rules", []) for p in r["http"]["paths"])


def ingress_source_problems(ings):
    """Who may reach which path: /v2/notifications only from Apple's 17.0.0.0/8 (an allow-list on
    the Ingress that holds it, and on nothing else: the annotation holds for every path of its
    Ingress, so uploads must live in another one without it), and no snippets, which could undo it."""
    problems = []
    for ing in ings:
        name = ing["metadata"]["name"]
        ann = ing["metadata"].get("annotations") or {}
        paths = [p[0] for p in ingress_paths(ing)]
        values = [ann[a] for a in ALLOWLIST_ANNOTATIONS if a in ann]
        nets = []
        for value in values:
            try:
                nets += [ipaddress.ip_network(v.strip(), strict=False) for v in str(value).split(",") if v.strip()]
            except ValueError:
                problems.append(f"{name}: allow-list {value!r} is not a list of addresses")
        if "/v2/notifications" in paths:
            if not values:
                problems.append(f"{name}: routes /v2/notifications with no whitelist-source-range: anyone can post notifications")
            elif not nets or not all(n.version == 4 and n.subnet_of(APPLE_NETWORK) for n in nets):
                problems.append(f"{name}: /v2/notifications allow-list {', '.join(map(str, values))} admits more than Apple's 17.0.0.0/8")
            others = [p for p in paths if p != "/v2/notifications"]
            if others:
                problems.append(f"{name}: {', '.join(others)} share(s) the notifications' allow-list: apps could not reach it")
        elif values:
            problems.append(f"{name}: {', '.join(paths)} restricted to {', '.join(map(str, values))}: apps upload from anywhere")
        snippets = [a for a in ann if a.endswith("-snippet")]
        if snippets:
            problems.append(f"{name}: {', '.join(snippets)} (snippets can undo the allow-list and are off by default in ingress-nginx)")
    return problems


def ingress_host_problems(ings):
    """Every Ingress of ingest serves the same hosts, each covered by its TLS section."""
    problems, hosts = [], set()
    for ing in ings:
        rule_hosts = {r.get("host") for r in ing["spec"].get("rules", [])}
        tls_hosts = {h for t in ing["spec"].get("tls", []) for h in t.get("hosts", [])}
        if not rule_hosts <= tls_hosts:
            problems.append(f"{ing['metadata']['name']}: hosts {sorted(map(str, rule_hosts - tls_hosts))} are not in its TLS section")
        hosts.add(frozenset(map(str, rule_hosts)))
    if len(hosts) > 1:
        problems.append(f"the Ingress objects serve different hosts: {sorted(sorted(h) for h in hosts)}")
    return problems


def check_ingress(label, docs):
    svc = find(docs, "Service", "ingest")
    ok = len(svc) == 1 and svc[0]["spec"]["selector"].get("app.kubernetes.io/name") == "ingest"
    checks.check(f"{label}: Service ingest selects the ingest pods", ok)
    ings = ingest_ingresses(docs)
    if not checks.check(f"{label}: Ingress objects route to ingest", bool(ings)):
        return
    paths = sorted(p for ing in ings for p in ingress_paths(ing))
    checks.check(f"{label}: the Ingress objects route exactly /v2/notifications, /v1/transactions, /v1/receipts, /v1/customer and /v1/offers/signature to ingest, each once",
                 paths == INGEST_ROUTES, str(paths))
    for ing in ings:
        name, spec = ing["metadata"]["name"], ing["spec"]
        ann = ing["metadata"].get("annotations", {})
        checks.check(f"{label}: Ingress {name} terminates TLS from a Secret", bool(spec.get("tls")) and all(t.get("secretName") for t in spec["tls"]))
        checks.check(f"{label}: Ingress {name} limits bodies to 128 KiB, as ingest does", ann.get("nginx.ingress.kubernetes.io/proxy-body-size") == "128k")
        problems = ingress_tls_problems(ing)
        checks.check(f"{label}: Ingress {name} is HTTPS only (plain HTTP redirected, force-ssl-redirect, HSTS not off)", not problems, "; ".join(problems))
    problems = ingress_host_problems(ings)
    checks.check(f"{label}: the Ingress objects serve one host, covered by their TLS sections", not problems, "; ".join(problems))
    problems = ingress_source_problems(ings)
    checks.check(f"{label}: /v2/notifications only from Apple's 17.0.0.0/8 (whitelist-source-range on its own Ingress), "
                 "/v1/transactions, /v1/receipts, /v1/customer and /v1/offers/signature from anywhere, no snippets", not problems, "; ".join(problems))


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
        spec = (pod_template(d) or {}).get("spec", {})
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            found += [f"{d['metadata']['name']} sets {e['name']}" for e in c.get("env", []) if e["name"] in TEST_TRUST_VARIABLES]
            if "appstore-sim" in c.get("image", ""):
                found.append(f"{d['metadata']['name']} runs the simulator")
    return found


def upload_auth_problems(docs, production):
    """What is wrong with how ingest authenticates app uploads: INGEST_UPLOAD_AUTH is jwt, hmac or
    none with the settings that mode needs (an https or mounted JWKS, an issuer and audience; a
    mounted HMAC secret); none only for Sandbox-only apps, and never in production, where an open
    upload would let anyone claim a purchase."""
    deps = find(docs, "Deployment", "ingest")
    if not deps:
        return ["no ingest Deployment"]
    spec = deps[0]["spec"]["template"]["spec"]
    c = spec["containers"][0]
    env = container_env(docs, c)
    mode = env.get("INGEST_UPLOAD_AUTH")
    if mode not in ("jwt", "hmac", "none"):
        return [f"INGEST_UPLOAD_AUTH is {mode!r}, not jwt, hmac or none: ingest would not start"]
    problems = []
    if mode == "jwt":
        problems += [f"jwt without {v}" for v in ("INGEST_UPLOAD_JWKS", "INGEST_UPLOAD_ISSUER", "INGEST_UPLOAD_AUDIENCE") if not env.get(v)]
        jwks = env.get("INGEST_UPLOAD_JWKS") or ""
        if "://" in jwks and not jwks.startswith("https://"):
            problems.append(f"INGEST_UPLOAD_JWKS {jwks} is not an https URL: ingest would not start")
        elif jwks and "://" not in jwks and not mounted_file(spec, c, jwks):
            problems.append(f"INGEST_UPLOAD_JWKS {jwks} is not a mounted file")
    elif mode == "hmac":
        secret = env.get("INGEST_UPLOAD_HMAC_SECRET_FILE")
        vol = mounted_file(spec, c, secret) if secret else None
        if not (vol and "secret" in vol):
            problems.append(f"INGEST_UPLOAD_HMAC_SECRET_FILE {secret!r} is not in a mounted Secret")
    else:
        if production:
            problems.append("INGEST_UPLOAD_AUTH is none in production: anyone could claim a purchase with its JWS")
        apps = [e.strip() for e in (env.get("APPSTORE_APPS") or "").split(",") if e.strip()]
        if not apps or any(e.count(":") != 2 or e.rsplit(":", 1)[1] != "Sandbox" for e in apps):
            problems.append(f"INGEST_UPLOAD_AUTH is none but ingest's APPSTORE_APPS {env.get('APPSTORE_APPS')!r} is not "
                            "Sandbox-only: ingest would refuse to start")
    return problems


def check_grant_migrations(label, docs, dep, env):
    problems = grant_migration_problems(dep, env, docs)
    checks.check(f"{label}: grant migrates in an init container (appstorectl migrate, database settings, password file) "
                 "and not itself (POSTGRES_MIGRATE=false)", not problems, "; ".join(problems))
    checks.check(f"{label}: `appstorectl migrate` is a subcommand and takes --wait",
                 "migrate" in appstorectl_subcommands() and "--wait" in option_flags("Migrate.swift"),
                 f"appstorectl has {sorted(appstorectl_subcommands())}")
    checks.check(f"{label}: no migration Job beside the init container (a Job is immutable: each release's apply would fail)",
                 not [j for j in find(docs, "Job") if "migrate" in json.dumps(pod_template(j)["spec"]["containers"])])


def check_products(label, docs, dep, env):
    problems = products_problems(docs, dep, env)
    checks.check(f"{label}: grant reads products.json from a generated ConfigMap (hash suffix: a change rolls grant) "
                 "in ProductCatalog's format", not problems, "; ".join(problems))


def check_workloads(label, docs):
    """What every workload of a render shares: images pinned, no replicas beside an autoscaler."""
    problems = [p for d, _ in workloads(docs) for p in image_problems(d, base=(label == "base"))]
    what = "images name no tag (the overlays pin the release), IfNotPresent" if label == "base" else \
        "every image is a digest or an immutable version tag (IfNotPresent never pulls a moved tag)"
    checks.check(f"{label}: {what}", not problems, "; ".join(problems[:6]))
    problems = replicas_problems(docs)
    checks.check(f"{label}: no Deployment sets replicas beside its HPA or ScaledObject (every apply would reset it)",
                 not problems, "; ".join(problems))
    for h in find(docs, "HorizontalPodAutoscaler") + find(docs, "ScaledObject"):
        lo = h["spec"].get("minReplicas", h["spec"].get("minReplicaCount", 1))
        checks.check(f"{label}: {h['kind']} {h['metadata']['name']} keeps at least 2 pods (one may be evicted, PDB maxUnavailable 1)",
                     lo >= 2, f"min {lo}")


def check_ops(label, docs):
    subcommands = appstorectl_subcommands()
    for (kind, name), args in OPS.items():
        found = find(docs, kind, name)
        if not checks.check(f"{label}: {kind} {name} exists", len(found) == 1):
            continue
        doc = found[0]
        c = pod_template(doc)["spec"]["containers"][0]
        checks.check(f"{label}: {kind} {name} runs the appstorectl image", "appstorectl" in c["image"].split("/")[-1], c["image"])
        given = c.get("args", [])
        if args is None:
            checks.check(f"{label}: {name} is a toolbox at 0 replicas with no autoscaler (scaled by hand, commands through exec)",
                         doc["spec"].get("replicas") == 0 and name not in autoscaled(docs) and c.get("command", [])[:1] == ["sleep"])
            needs = ("broker", "database", "api")
        else:
            checks.check(f"{label}: {kind} {name} runs `appstorectl {' '.join(args)}`", given[:len(args)] == args, str(given))
            checks.check(f"{label}: `appstorectl {args[0]}` is a subcommand", args[0] in subcommands, f"appstorectl has {sorted(subcommands)}")
            source = {"reconcile": "Reconcile.swift", "refunds": "Refunds.swift", "topics": "Topics.swift"}[args[0]]
            flags = [a.split("=")[0] for a in given if a.startswith("--")]
            unknown = [f for f in flags if f not in option_flags(source)]
            checks.check(f"{label}: {kind} {name} uses only flags {source} declares", not unknown, f"unknown: {unknown}")
            needs = ("broker", "database", "api") if args[0] in ("reconcile", "refunds") else ("broker",)
        if label == "base":  # the base has no broker address or apps; the overlays add them
            needs = ()
        problems = settings_problems(docs, doc, needs)
        checks.check(f"{label}: {kind} {name} has every setting its commands read ({', '.join(needs) or 'the overlays add them'}), files from Secrets",
                     not problems, "; ".join(problems))
        env = container_env(docs, c)
        unknown = sorted(k for k in env if k not in SOURCE_VARIABLES and not k.startswith("KAFKA_PROP_"))
        checks.check(f"{label}: {kind} {name} gets only variables the sources read", not unknown, f"no source reads: {', '.join(unknown)}")
    for cj in find(docs, "CronJob", "appstore-reconcile") + find(docs, "CronJob", "appstore-refunds"):
        minute, hour, *rest = cj["spec"]["schedule"].split()
        checks.check(f"{label}: {cj['metadata']['name']} runs hourly, one run at a time",
                     minute.isdigit() and hour == "*" and rest == ["*", "*", "*"] and cj["spec"].get("concurrencyPolicy") == "Forbid",
                     cj["spec"]["schedule"])
    for job in find(docs, "Job"):
        checks.check(f"{label}: Job {job['metadata']['name']} removes itself after finishing (a Job is immutable; the next release recreates it)",
                     "ttlSecondsAfterFinished" in job["spec"])


def restricted_problems(docs):
    """Pods that the `restricted` Pod Security Standard would refuse (the production namespace enforces it)."""
    problems = []
    for d, t in workloads(docs):
        spec = t["spec"]
        name = f"{d['kind']}/{d['metadata']['name']}"
        pod_sc = spec.get("securityContext", {})
        if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
            problems.append(f"{name}: shares a host namespace")
        if any("hostPath" in v for v in spec.get("volumes", [])):
            problems.append(f"{name}: mounts a hostPath volume")
        for c in all_containers(spec):
            sc = c.get("securityContext", {})
            where = f"{name} container {c['name']}"
            if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
                problems.append(f"{where}: runAsNonRoot is not true")
            if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
                problems.append(f"{where}: runs as user 0")
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation is not false")
            if sc.get("privileged"):
                problems.append(f"{where}: privileged")
            if "ALL" not in sc.get("capabilities", {}).get("drop", []) or sc.get("capabilities", {}).get("add"):
                problems.append(f"{where}: does not drop ALL capabilities (or adds one)")
            seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {})).get("type")
            if seccomp not in ("RuntimeDefault", "Localhost"):
                problems.append(f"{where}: seccompProfile is not RuntimeDefault")
    return problems


def selects(selector, labels):
    """Whether a label selector (matchLabels, matchExpressions In/NotIn/Exists) selects `labels`."""
    for k, v in (selector or {}).get("matchLabels", {}).items():
        if labels.get(k) != v:
            return False
    for e in (selector or {}).get("matchExpressions", []):
        present, value = e["key"] in labels, labels.get(e["key"])
        op = e["operator"]
        if (op == "In" and value not in e.get("values", [])) or (op == "NotIn" and value in e.get("values", [])) \
                or (op == "Exists" and not present) or (op == "DoesNotExist" and present):
            return False
    return True


def egress_ports(docs, labels):
    """The TCP/UDP ports a pod with `labels` may reach, by the NetworkPolicies of the render."""
    ports = set()
    for np in find(docs, "NetworkPolicy"):
        spec = np["spec"]
        if "Egress" not in spec.get("policyTypes", []) or not selects(spec.get("podSelector"), labels):
            continue
        for rule in spec.get("egress", []):
            for port in rule.get("ports", [{"port": "any"}]):
                ports.add(port.get("port"))
    return ports


def network_policy_problems(docs):
    """Default deny in both directions, and no workload reaches what it has no use for."""
    problems = []
    deny = [np for np in find(docs, "NetworkPolicy") if np["spec"].get("podSelector") == {}
            and set(np["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}
            and not np["spec"].get("ingress") and not np["spec"].get("egress")]
    if not deny:
        problems.append("no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rules)")
    may_use_database = {"grant", "appstorectl", "appstore-reconcile", "appstore-refunds"}
    for d, t in workloads(docs):
        labels = t["metadata"].get("labels", {})
        name = labels.get("app.kubernetes.io/name", d["metadata"]["name"])
        ports = egress_ports(docs, labels)
        if "any" in ports:
            problems.append(f"{name}: a NetworkPolicy lets it reach any port")
        if 5432 in ports and name not in may_use_database:
            problems.append(f"{name}: may reach Postgres (5432), which it never uses")
        if 53 not in ports:
            problems.append(f"{name}: cannot resolve names (no DNS egress)")
    return problems


def production_tracing_problems(docs):
    """Production's switch for tracing is its pipeline.env key (blank until an operator names a
    collector), and its NetworkPolicies let the stages, and only they, reach OTLP/HTTP."""
    problems = []
    env_file = os.path.join(K8S, "overlays", "production", "pipeline.env")
    keys = dict(line.strip().split("=", 1) for line in open(env_file) if "=" in line and not line.lstrip().startswith("#"))
    if "OTEL_EXPORTER_OTLP_ENDPOINT" not in keys:
        problems.append(f"{os.path.relpath(env_file, REPO)} has no OTEL_EXPORTER_OTLP_ENDPOINT key for the operator to set")
    for d, t in workloads(docs):
        labels = t["metadata"].get("labels", {})
        name = labels.get("app.kubernetes.io/name", d["metadata"]["name"])
        reaches = OTLP_HTTP_PORT in egress_ports(docs, labels)
        if name in STAGES and not reaches:
            problems.append(f"{name}: no NetworkPolicy lets it reach a collector on {OTLP_HTTP_PORT}")
        elif name not in STAGES and reaches:
            problems.append(f"{name}: may reach {OTLP_HTTP_PORT}, but only the stages export traces")
    return problems


def kafka_principals():
    return json.load(open(os.path.join(REPO, "deploy", "kafka", "principals.json")))["principals"]


def acl_problems(principals):
    """Each stage's principal may do only what its stage does (topics.json); only enrich (and the
    operators, for replays) may write the enriched topic grant trusts; nobody but the operators
    and the topics job administers topics; nobody but grant writes the change stream."""
    problems = []
    topics = topic_catalogue()
    admin_ops = {"Create", "Alter", "AlterConfigs", "Delete", "ClusterAction", "All"}
    admins = {"appstore-topics", "appstore-operator"}

    def grants(principal, resource, name, op):
        for acl in principals.get(principal, {}).get("acls", []):
            if acl["resource"] != resource or op not in acl["operations"] and "All" not in acl["operations"]:
                continue
            if acl["name"] == name or (acl["pattern"] == "prefixed" and name.startswith(acl["name"])) or acl["name"] == "*":
                return True
        return False

    for principal, spec in principals.items():
        for acl in spec["acls"]:
            if principal not in admins and admin_ops & set(acl["operations"]):
                problems.append(f"{principal} may {sorted(admin_ops & set(acl['operations']))} {acl['resource']} {acl['name']}")
            if acl["name"] == "*" or (acl["pattern"] == "prefixed" and principal not in admins):
                problems.append(f"{principal} has a wildcard or prefixed ACL on {acl['resource']} {acl['name']}")
    for stage in ("ingest", "verify", "enrich", "grant"):
        principal = f"appstore-{stage}"
        inputs = [t for t in topics if t.get("consumerGroup") == f"appstore.{stage}"]
        outputs = [t["name"] for t in topics if t.get("producer") == stage]
        for t in topics:
            name = t["name"]
            if grants(principal, "topic", name, "Write") and name not in outputs:
                problems.append(f"{principal} may write {name}, which {stage} never produces")
            if grants(principal, "topic", name, "Read") and name not in [i["name"] for i in inputs]:
                problems.append(f"{principal} may read {name}, which {stage} never consumes")
        for t in inputs:
            if not grants(principal, "topic", t["name"], "Read") or not grants(principal, "group", f"appstore.{stage}", "Read"):
                problems.append(f"{principal} cannot read its input {t['name']} in group appstore.{stage}")
        for name in outputs:
            if not grants(principal, "topic", name, "Write"):
                problems.append(f"{principal} cannot write its output {name}")
    for topic, writers in (("appstore.notifications.enriched.v1", {"appstore-enrich", "appstore-operator"}),
                           ("entitlements.changes.v1", {"appstore-grant"})):
        extra = sorted(p for p in principals if p not in writers and grants(p, "topic", topic, "Write"))
        if extra:
            problems.append(f"{', '.join(extra)} may write {topic}")
    return problems


def principal_mount_problems(docs, principals):
    """Every production workload logs in to the brokers as the principal principals.json names for it."""
    problems = []
    owner = {w: p for p, spec in principals.items() for w in spec["workloads"]}
    for d, t in workloads(docs):
        key = f"{d['kind']}/{d['metadata']['name']}"
        secrets = [v["secret"]["secretName"] for v in t["spec"].get("volumes", []) if v.get("name") == "kafka-client" and "secret" in v]
        if key not in owner:
            problems.append(f"{key} has no principal in deploy/kafka/principals.json")
            continue
        expected = "appstore-kafka-" + owner[key].removeprefix("appstore-")
        if secrets != [expected]:
            problems.append(f"{key} mounts {secrets or 'no broker credentials'} instead of {expected}")
    return problems


def record_mac_problems(docs):
    """enrich signs and grant checks enriched records with the same mounted Secret; no other
    workload holds it (a compromised ingest must not be able to sign a forged record)."""
    problems, secrets = [], {}
    for d, t in workloads(docs):
        spec = t["spec"]
        name = d["metadata"]["name"]
        mounted = {v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v and v["secret"]["secretName"] == "appstore-record-mac"}
        if name in ("enrich", "grant"):
            c = next(c for c in spec["containers"] if c["name"] == name)
            path = container_env(docs, c).get("RECORD_MAC_KEYS_FILE") or ""
            vol = mounted_file(spec, c, path) if path else None
            if not (vol and "secret" in vol):
                problems.append(f"{name}: RECORD_MAC_KEYS_FILE is not set to a file of a mounted Secret")
            else:
                secrets[name] = vol["secret"]["secretName"]
        elif mounted:
            problems.append(f"{d['kind']}/{name} mounts appstore-record-mac, which only enrich and grant may hold")
    if len(set(secrets.values())) > 1:
        problems.append(f"enrich and grant read different Secrets: {secrets}")
    return problems


def grant_login_problems(docs):
    """grant's container logs in to Postgres with credentials of its own: its password file lies in
    a Secret other than the one its init container `migrate` (the owner) reads, and POSTGRES_USER
    comes from that Secret too. A grant holding the owner's login could drop or rewrite any table."""
    problems = []
    for d in find(docs, "Deployment", "grant"):
        spec = d["spec"]["template"]["spec"]
        c = next(c for c in spec["containers"] if c["name"] == "grant")
        migrate = next((i for i in spec.get("initContainers", []) if i["name"] == "migrate"), None)
        owner = set()
        for i in [migrate] if migrate else []:
            path = container_env(docs, i).get("POSTGRES_PASSWORD_FILE") or ""
            vol = mounted_file(spec, i, path) if path else None
            if vol and "secret" in vol:
                owner.add(vol["secret"]["secretName"])
        path = container_env(docs, c).get("POSTGRES_PASSWORD_FILE") or ""
        vol = mounted_file(spec, c, path) if path else None
        secret = vol["secret"]["secretName"] if vol and "secret" in vol else None
        if secret is None:
            problems.append("grant: POSTGRES_PASSWORD_FILE is not a file of a mounted Secret")
        elif secret in owner:
            problems.append(f"grant reads the owner's password (Secret {secret}, as migrate does)")
        mounted = {m["name"] for m in c.get("volumeMounts", [])}
        for v in spec.get("volumes", []):
            if v["name"] in mounted and v.get("secret", {}).get("secretName") in owner:
                problems.append(f"grant mounts the owner's Secret {v['secret']['secretName']}")
        user = next((e for e in c.get("env", []) if e["name"] == "POSTGRES_USER"), None)
        ref = (user or {}).get("valueFrom", {}).get("secretKeyRef", {}).get("name")
        if ref != secret:
            problems.append("grant's POSTGRES_USER does not come from the Secret that holds its password")
    return problems


def tracing_self_tests(docs):
    """Each way of losing a stage's tracing settings is refused."""
    def with_env(change):
        bad = copy.deepcopy(docs)
        dep = next(d for d in bad if d["kind"] == "Deployment" and d["metadata"]["name"] == "verify")
        change(dep["spec"]["template"]["spec"]["containers"][0]["env"])
        return tracing_env_problems(bad, dep)
    def drop(name):
        return lambda env: env.__delitem__(next(i for i, e in enumerate(env) if e["name"] == name))
    checks.check("self-test: the tracing check refuses a stage without OTEL_RESOURCE_ATTRIBUTES", bool(with_env(drop("OTEL_RESOURCE_ATTRIBUTES"))))
    checks.check("self-test: the tracing check refuses k8s.namespace.name from a variable that is not set",
                 bool(with_env(drop("K8S_NAMESPACE_NAME"))))
    def move_first(env):
        i = next(i for i, e in enumerate(env) if e["name"] == "OTEL_RESOURCE_ATTRIBUTES")
        env.insert(0, env.pop(i))
    checks.check("self-test: the tracing check refuses OTEL_RESOURCE_ATTRIBUTES before the variables it expands", bool(with_env(move_first)))
    def namespace_from_name(env):
        next(e for e in env if e["name"] == "K8S_NAMESPACE_NAME")["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.name"
    checks.check("self-test: the tracing check refuses k8s.namespace.name from the pod's name", bool(with_env(namespace_from_name)))
    def without_pipeline_key(key, value=None):
        bad = copy.deepcopy(docs)
        cm = next(d for d in bad if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("appstore-pipeline"))
        if value is None:
            del cm["data"][key]
        else:
            cm["data"][key] = value
        return tracing_env_problems(bad, find(bad, "Deployment", "grant")[0])
    checks.check("self-test: the tracing check refuses a stage without OTEL_EXPORTER_OTLP_ENDPOINT",
                 bool(without_pipeline_key("OTEL_EXPORTER_OTLP_ENDPOINT")))
    checks.check("self-test: the tracing check refuses an endpoint without http(s)://",
                 bool(without_pipeline_key("OTEL_EXPORTER_OTLP_ENDPOINT", "otel-collector.monitoring.svc:4318")))
    checks.check("self-test: the tracing check accepts an http:// collector endpoint",
                 not without_pipeline_key("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-collector.monitoring.svc:4318"))
    bad = copy.deepcopy(docs)
    bad = [d for d in bad if not (d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "allow-otlp-egress")]
    checks.check("self-test: the tracing check refuses production without egress to a collector", bool(production_tracing_problems(bad)))
    typo = {"env": [{"name": "K8S_POD_NAM", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "OTEL_RESOURCE_ATTRIBUTES", "value": "k8s.pod.name=$(K8S_POD_NAME)"}]}
    checks.check("self-test: the variables check exempts only pod fields expanded into another variable", not expansion_only_variables(typo))


def self_tests(docs):
    """The checks above must be able to fail: known-bad inputs are refused."""
    tracing_self_tests(docs)
    bad = copy.deepcopy(find(docs, "Deployment", "ingest")[0])
    bad["spec"]["replica"] = 2
    checks.check("self-test: the Kubernetes validator refuses an unknown Deployment field", bool(schema_errors(bad)))
    so = copy.deepcopy(find(docs, "ScaledObject")[0])
    del so["spec"]["triggers"][0]["metadata"]["consumerGroup"]
    checks.check("self-test: the KEDA schema refuses a Kafka trigger without consumerGroup", bool(schema_errors(so)))
    so = copy.deepcopy(find(docs, "ScaledObject")[0])
    so["spec"]["triggers"][0]["metadata"]["lagThreshold"] = 100
    checks.check("self-test: the KEDA schema refuses a numeric lagThreshold (must be a string)", bool(schema_errors(so)))
    rule = copy.deepcopy(load_docs(os.path.join(K8S, "components", "monitoring", "prometheusrule.yaml"))[0])
    rule["spec"]["groups"][0]["rules"][0]["severity"] = "critical"
    checks.check("self-test: the PrometheusRule schema refuses an unknown rule field", bool(schema_errors(rule)))
    checks.check("self-test: an unknown custom resource kind is an error, not skipped",
                 bool(schema_errors({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})))
    dep = copy.deepcopy(find(docs, "Deployment", "verify")[0])
    dep["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "APPSTORE_TRUSTED_ROOTS", "value": "/x.pem"})
    checks.check("self-test: the production trust guard sees APPSTORE_TRUSTED_ROOTS", bool(trust_violations([dep])))
    cj = copy.deepcopy(find(docs, "CronJob", "appstore-reconcile")[0])
    cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "APPSTORE_API_BASE_URL", "value": "http://sim"})
    checks.check("self-test: the production trust guard sees a CronJob's APPSTORE_API_BASE_URL", bool(trust_violations([cj])))
    # Issue 28: least privilege in the cluster.
    prod_docs = docs
    bad = [d for d in copy.deepcopy(prod_docs) if not (d.get("kind") == "NetworkPolicy" and d["metadata"]["name"] == "default-deny")]
    checks.check("self-test: the NetworkPolicy check refuses a render without default deny", bool(network_policy_problems(bad)))
    bad = copy.deepcopy(prod_docs)
    for d in bad:
        if d.get("kind") == "NetworkPolicy" and d["metadata"]["name"] == "allow-postgres-egress":
            d["spec"]["podSelector"]["matchExpressions"][0]["values"].append("ingest")
    checks.check("self-test: the NetworkPolicy check refuses Postgres egress for ingest", bool(network_policy_problems(bad)))
    dep = copy.deepcopy(find(docs, "Deployment", "ingest")[0])
    dep["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["drop"] = []
    checks.check("self-test: the Pod Security check refuses a container that keeps its capabilities", bool(restricted_problems([dep])))
    dep = copy.deepcopy(find(docs, "Deployment", "grant")[0])
    dep["spec"]["template"]["spec"]["securityContext"].pop("runAsNonRoot", None)
    checks.check("self-test: the Pod Security check refuses a pod that may run as root", bool(restricted_problems([dep])))
    bad = copy.deepcopy(find(docs, "Deployment", "grant"))
    for c in bad[0]["spec"]["template"]["spec"]["containers"]:
        c["env"] = [e for e in c.get("env", []) if not e["name"].startswith("POSTGRES_")]
        c["volumeMounts"].append({"name": "postgres-password", "mountPath": "/run/secrets/postgres", "readOnly": True})
    checks.check("self-test: the grant login check refuses grant logging in with the owner's Secret",
                 bool(grant_login_problems(bad + find(docs, "ConfigMap"))))
    bad = copy.deepcopy(find(docs, "Deployment", "grant"))
    for c in bad[0]["spec"]["template"]["spec"]["containers"]:
        c["env"] = [e for e in c.get("env", []) if e["name"] != "RECORD_MAC_KEYS_FILE"]
    checks.check("self-test: the record MAC check refuses a grant that does not check records", bool(record_mac_problems(bad)))
    bad = copy.deepcopy(find(docs, "Deployment", "ingest"))
    bad[0]["spec"]["template"]["spec"]["volumes"].append({"name": "record-mac", "secret": {"secretName": "appstore-record-mac"}})
    checks.check("self-test: the record MAC check refuses ingest holding the key", bool(record_mac_problems(bad)))
    principals = kafka_principals()
    bad = copy.deepcopy(principals)
    bad["appstore-ingest"]["acls"].append(
        {"resource": "topic", "name": "appstore.notifications.enriched.v1", "pattern": "literal", "operations": ["Write"]})
    checks.check("self-test: the ACL check refuses ingest writing the enriched topic", bool(acl_problems(bad)))
    bad = copy.deepcopy(principals)
    bad["appstore-grant"]["acls"].append({"resource": "topic", "name": "appstore.", "pattern": "prefixed", "operations": ["Create"]})
    checks.check("self-test: the ACL check refuses a stage that may create topics", bool(acl_problems(bad)))
    bad = copy.deepcopy(principals)
    bad["appstore-verify"]["acls"] = [a for a in bad["appstore-verify"]["acls"] if a["resource"] != "group"]
    checks.check("self-test: the ACL check refuses a stage that cannot read its group", bool(acl_problems(bad)))
    dep = copy.deepcopy(find(docs, "Deployment", "ingest")[0])
    for v in dep["spec"]["template"]["spec"]["volumes"]:
        if v.get("name") == "kafka-client":
            v["secret"]["secretName"] = "appstore-kafka-operator"
    checks.check("self-test: the principal check refuses ingest logging in as the operator", bool(principal_mount_problems([dep], principals)))
    # The bugs of issue 12, each put back: the checks must refuse them.
    # Issue 14: notifications only from Apple's addresses, at the Ingress.
    ings = ingest_ingresses(docs)
    notifications = next(i for i in ings if "/v2/notifications" in [p[0] for p in ingress_paths(i)])
    uploads = next(i for i in ings if i is not notifications)
    wl = "nginx.ingress.kubernetes.io/whitelist-source-range"

    def source_problems_with(change):
        bad = copy.deepcopy(ings)
        change(*bad)
        return ingress_source_problems(bad)
    n, u = ings.index(notifications), ings.index(uploads)
    checks.check("self-test: the Ingress check refuses /v2/notifications without an allow-list",
                 bool(source_problems_with(lambda *b: b[n]["metadata"]["annotations"].pop(wl))))
    for value in ("0.0.0.0/0", "17.0.0.0/8,10.0.0.0/8", "17.0.0.0/7", "not-an-address"):
        checks.check(f"self-test: the Ingress check refuses the notifications allow-list {value}",
                     bool(source_problems_with(lambda *b, value=value: b[n]["metadata"]["annotations"].__setitem__(wl, value))))
    checks.check("self-test: the Ingress check sees the allowlist-source-range name too",
                 bool(source_problems_with(lambda *b: b[n]["metadata"]["annotations"].__setitem__(
                     "nginx.ingress.kubernetes.io/allowlist-source-range", "0.0.0.0/0"))))
    checks.check("self-test: the Ingress check refuses /v1/transactions restricted to Apple's addresses",
                 bool(source_problems_with(lambda *b: b[u]["metadata"]["annotations"].__setitem__(wl, "17.0.0.0/8"))))
    checks.check("self-test: the Ingress check refuses both paths on the allow-listed Ingress",
                 bool(source_problems_with(lambda *b: b[n]["spec"]["rules"][0]["http"]["paths"].extend(b[u]["spec"]["rules"][0]["http"]["paths"]))))
    checks.check("self-test: the Ingress check refuses a configuration-snippet",
                 bool(source_problems_with(lambda *b: b[u]["metadata"]["annotations"].__setitem__(
                     "nginx.ingress.kubernetes.io/configuration-snippet", "allow all;"))))
    bad = copy.deepcopy(ings)
    bad[u]["spec"]["rules"][0]["host"] = "other.invalid"
    checks.check("self-test: the host check refuses an Ingress whose host is not in its TLS section (and differs from the other's)",
                 len(ingress_host_problems(bad)) == 2)
    ing = copy.deepcopy(notifications)
    ing["metadata"]["annotations"]["nginx.ingress.kubernetes.io/ssl-redirect"] = "false"
    checks.check("self-test: the Ingress check refuses ssl-redirect \"false\"", bool(ingress_tls_problems(ing)))
    del ing["metadata"]["annotations"]["nginx.ingress.kubernetes.io/ssl-redirect"]
    del ing["metadata"]["annotations"]["nginx.ingress.kubernetes.io/force-ssl-redirect"]
    checks.check("self-test: the Ingress check refuses an Ingress without force-ssl-redirect", bool(ingress_tls_problems(ing)))
    bad = copy.deepcopy(docs)
    next(d for d in bad if d["kind"] == "Deployment" and d["metadata"]["name"] == "ingest")["spec"]["replicas"] = 3
    checks.check("self-test: the replicas check refuses spec.replicas beside an HPA (production's ingest: 3)", bool(replicas_problems(bad)))
    bad = copy.deepcopy(docs)
    next(d for d in bad if d["kind"] == "Deployment" and d["metadata"]["name"] == "grant")["spec"]["replicas"] = 2
    checks.check("self-test: the replicas check refuses spec.replicas beside a KEDA ScaledObject", bool(replicas_problems(bad)))
    for tag in ("latest", "production", "sandbox", "main"):
        dep = copy.deepcopy(find(docs, "Deployment", "verify")[0])
        dep["spec"]["template"]["spec"]["containers"][0]["image"] = f"appstore-entitlements/verify:{tag}"
        checks.check(f"self-test: the image check refuses the mutable tag {tag} with IfNotPresent", bool(image_problems(dep, base=False)))
    dep = copy.deepcopy(find(docs, "Deployment", "verify")[0])
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = "appstore-entitlements/verify@sha256:" + "0" * 64
    checks.check("self-test: the image check accepts a digest", not image_problems(dep, base=False))
    for stage in ("enrich", "grant"):
        dep = copy.deepcopy(find(docs, "Deployment", stage)[0])
        dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"] = "/ready"
        checks.check(f"self-test: the probe check refuses {stage} readiness on /ready (outages would block drains)",
                     bool(probe_problems(dep, stage, STAGES[stage])))
    dep = copy.deepcopy(find(docs, "Deployment", "ingest")[0])
    dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"] = "/health"
    checks.check("self-test: the probe check refuses ingest readiness on /health", bool(probe_problems(dep, "ingest", STAGES["ingest"])))
    grant = find(docs, "Deployment", "grant")[0]
    env = container_env(docs, grant["spec"]["template"]["spec"]["containers"][0])
    dep = copy.deepcopy(grant)
    del dep["spec"]["template"]["spec"]["initContainers"]
    checks.check("self-test: the migration check refuses grant without its migrate init container", bool(grant_migration_problems(dep, env)))
    checks.check("self-test: the migration check refuses grant migrating itself",
                 bool(grant_migration_problems(grant, dict(env, POSTGRES_MIGRATE="true"))))
    bad = copy.deepcopy(docs)
    cm = next(d for d in bad if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("appstore-products-"))
    cm["metadata"]["name"] = "appstore-products"
    dep = next(d for d in bad if d["kind"] == "Deployment" and d["metadata"]["name"] == "grant")
    next(v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == "products")["configMap"]["name"] = "appstore-products"
    checks.check("self-test: the products check refuses a mapping ConfigMap without a content hash", bool(products_problems(bad, dep, env)))
    checks.check("self-test: the products check refuses a product without entitlements", bool(catalog_problems('{"products": {"p": {"entitlements": []}}}')))
    toolbox = copy.deepcopy(find(docs, "Deployment", "appstorectl")[0])
    toolbox["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = []
    checks.check("self-test: the settings check refuses appstorectl without its Secret files",
                 bool(settings_problems(docs, toolbox, ("broker", "database", "api"))))
    def with_uploads(**data):
        bad = copy.deepcopy(docs)
        cm = next(d for d in bad if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("appstore-ingest-uploads"))
        cm["data"] = {k: v for k, v in dict(cm["data"], **data).items() if v is not None}
        return bad
    checks.check("self-test: the upload check refuses INGEST_UPLOAD_AUTH=none in production",
                 bool(upload_auth_problems(with_uploads(INGEST_UPLOAD_AUTH="none"), production=True)))
    checks.check("self-test: the upload check refuses none when an app accepts Production, outside production too",
                 bool(upload_auth_problems(with_uploads(INGEST_UPLOAD_AUTH="none"), production=False)))
    checks.check("self-test: the upload check refuses a missing INGEST_UPLOAD_AUTH",
                 bool(upload_auth_problems(with_uploads(INGEST_UPLOAD_AUTH=None), production=True)))
    checks.check("self-test: the upload check refuses a plain-http JWKS",
                 bool(upload_auth_problems(with_uploads(INGEST_UPLOAD_JWKS="http://identity.example.com/jwks"), production=True)))
    checks.check("self-test: the upload check refuses jwt without an audience",
                 bool(upload_auth_problems(with_uploads(INGEST_UPLOAD_AUDIENCE=None), production=True)))
    checks.check("self-test: the upload check refuses hmac without a mounted secret",
                 bool(upload_auth_problems(with_uploads(INGEST_UPLOAD_AUTH="hmac", INGEST_UPLOAD_HMAC_SECRET_FILE="/run/secrets/x"), production=True)))
    checks.check("self-test: the option parser reads appstorectl's flags", "--leeway-seconds" in option_flags("Reconcile.swift")
                 and "--dry-run" in option_flags("Reconcile.swift"))


# ---- deploy/stack.env ------------------------------------------------------------------------------
# deploy/containers/kube turns the sandbox overlay into the stack kube-test runs here: where its files,
# and the base's database name, say what deploy/stack.env says, they must say the same.
KUBE_TEST = os.path.join(REPO, "deploy", "containers", "kube")
LOCAL_TUNING = {"KAFKA_SESSION_TIMEOUT_MS": "LOCAL_KAFKA_SESSION_TIMEOUT_MS",
                "KAFKA_HEARTBEAT_INTERVAL_MS": "LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS",
                "KAFKA_FETCH_WAIT_MAX_MS": "LOCAL_KAFKA_FETCH_WAIT_MAX_MS"}


def stack_problems(stack):
    """The stages' local broker tuning (kube/pipeline.env), the app the simulated Apple plays
    (kube/apps.env, the simulator's pod), the database's name (the test's Postgres pod, the base's
    postgres.env, which the sandbox overlay keeps)."""
    def differs(path, what, value, key):
        return f"{os.path.relpath(path, REPO)}: {what} is {value!r}, deploy/stack.env's {key} is {stack.get(key)!r}"
    problems = []
    path = os.path.join(KUBE_TEST, "pipeline.env")
    pipeline = read_env_file(path)
    for var, key in LOCAL_TUNING.items():
        if pipeline.get(var) != stack.get(key):
            problems.append(differs(path, var, pipeline.get(var), key))
    path = os.path.join(KUBE_TEST, "apps.env")
    apps = read_env_file(path)
    for var in ("APPSTORE_APPS", "APPSTORE_API_CREDENTIALS"):
        bundles = sorted({e.split(":")[0] for e in apps.get(var, "").split(",") if e})
        if bundles != [stack.get("LOCAL_BUNDLE_ID")]:
            problems.append(differs(path, f"the app of {var}", ",".join(bundles), "LOCAL_BUNDLE_ID"))
    path = os.path.join(KUBE_TEST, "infrastructure.yaml")
    env = {(d["metadata"]["name"], e["name"]): e.get("value") for d in load_docs(path)
           for c in d.get("spec", {}).get("containers", []) for e in c.get("env", [])}
    for pod, var, key in (("appstore-sim", "SIM_BUNDLE_ID", "LOCAL_BUNDLE_ID"), ("postgres", "POSTGRES_DB", "POSTGRES_DATABASE")):
        if env.get((pod, var)) != stack.get(key):
            problems.append(differs(path, f"pod {pod}'s {var}", env.get((pod, var)), key))
    path = os.path.join(K8S, "base", "postgres.env")
    database = read_env_file(path).get("POSTGRES_DATABASE")
    if database != stack.get("POSTGRES_DATABASE"):
        problems.append(differs(path, "POSTGRES_DATABASE", database, "POSTGRES_DATABASE"))
    return problems


def check_stack():
    stack = stack_env()
    problems = stack_problems(stack)
    checks.check("deploy/containers/kube and the base's database name say what deploy/stack.env says: the stages' local broker "
                 "tuning, the simulated app, the database's name", not problems, "; ".join(problems))
    for key, value in (("LOCAL_KAFKA_SESSION_TIMEOUT_MS", "10000"), ("LOCAL_BUNDLE_ID", "com.example.other"),
                       ("POSTGRES_DATABASE", "appstore")):
        checks.check(f"self-test: the deploy/stack.env check catches the Kubernetes test disagreeing with {key}",
                     bool(stack_problems(dict(stack, **{key: value}))))


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
        check_workloads(label, docs)
        check_ops(label, docs)
        if label != "base":  # the overlays generate the upload settings
            problems = upload_auth_problems(docs, production=label == "production")
            checks.check(f"{label}: ingest authenticates uploads (INGEST_UPLOAD_AUTH {'jwt or hmac' if label == 'production' else 'set'}, "
                         "with the settings its mode needs)", not problems, "; ".join(problems))
        if label != "base":  # every overlay: least privilege is not a production-only setting
            problems = grant_login_problems(docs)
            checks.check(f"{label}: grant logs in to Postgres as its own login (appstore_grant), never with the owner's Secret",
                         not problems, "; ".join(problems))
    check_monitoring_component(kubectl)
    check_stack()
    problems = kustomization_replicas_problems()
    checks.check("no kustomization or component sets replicas for an autoscaled stage", not problems, "; ".join(problems))
    prod = renders.get("overlays/production") or []
    if prod:
        v = trust_violations(prod)
        checks.check("production: no test root, no API base URL override, no simulator", not v, "; ".join(v))
        apps = [cm for cm in find(prod, "ConfigMap") if "APPSTORE_APPS" in cm.get("data", {})]
        checks.check("production: APPSTORE_APPS serves the Production environment",
                     bool(apps) and all("Production" in cm["data"]["APPSTORE_APPS"] for cm in apps))
        checks.check("production: consuming stages scale on consumer lag (KEDA)",
                     all(find(prod, "ScaledObject", s) for s in CONSUMERS))
        hpa = find(prod, "HorizontalPodAutoscaler", "ingest")
        checks.check(f"production: ingest keeps at least {PRODUCTION_MIN_INGEST} pods, set on its HPA (minReplicas)",
                     bool(hpa) and hpa[0]["spec"]["minReplicas"] >= PRODUCTION_MIN_INGEST, str(hpa and hpa[0]["spec"].get("minReplicas")))
        files = [f"{d['kind']}/{d['metadata']['name']}: {p}" for d, _ in workloads(prod) for p in settings_problems(prod, d, ())]
        checks.check("production: every workload mounts the Secret files its settings name (broker credentials where "
                     "KAFKA_PROPERTIES_FILE points, the database password, the .p8 keys)", not files, "; ".join(files))
        ns = find(prod, "Namespace")
        checks.check("production: the namespace enforces the restricted Pod Security Standard",
                     bool(ns) and ns[0]["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce") == "restricted")
        problems = restricted_problems(prod)
        checks.check("production: every pod meets the restricted Pod Security Standard", not problems, "; ".join(problems[:6]))
        problems = network_policy_problems(prod)
        checks.check("production: NetworkPolicies deny by default; only grant and the operations workloads reach Postgres",
                     not problems, "; ".join(problems[:6]))
        problems = production_tracing_problems(prod)
        checks.check(f"production: pipeline.env has the key OTEL_EXPORTER_OTLP_ENDPOINT to turn tracing on (blank: off), and the four stages "
                     f"may reach a collector on OTLP/HTTP {OTLP_HTTP_PORT}", not problems, "; ".join(problems))
        problems = record_mac_problems(prod)
        checks.check("production: enrich signs and grant checks enriched records with one Secret no other workload mounts",
                     not problems, "; ".join(problems))

        principals = kafka_principals()
        problems = principal_mount_problems(prod, principals)
        checks.check("production: every workload logs in to the brokers as its own principal (deploy/kafka/principals.json)",
                     not problems, "; ".join(problems[:6]))
        problems = acl_problems(principals)
        checks.check("deploy/kafka: each stage's principal reads only its input (its group) and writes only its output and DLQ; "
                     "only enrich writes the enriched topic, only grant the change stream, only operators administer",
                     not problems, "; ".join(problems[:6]))
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
